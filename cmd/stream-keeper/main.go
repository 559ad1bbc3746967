/*
Copyright The Foo Operator Authors.

Licensed under the Apache License, Version 2.0 (the "License");
you may not use this file except in compliance with the License.
You may obtain a copy of the License at

    http://www.apache.org/licenses/LICENSE-2.0

Unless required by applicable law or agreed to in writing, software
distributed under the License is distributed on an "AS IS" BASIS,
WITHOUT WARRANTIES OR CONDITIONS OF ANY KIND, either express or implied.
See the License for the specific language governing permissions and
limitations under the License.
*/

// Command stream-keeper keeps the shared stream's ApiServerSource
// (pkg/streamkeeper) as a Knative Service that scales to zero: it keeps it
// when its pod starts, then once for each CloudEvent it receives on $PORT
// (a member's Trigger, a CRD or the stream's ClusterRoles changed, a new
// adapter of the stream, its hourly ping), and answers 200 once the source
// is kept, 500 if it could not be (the broker retries). Each member it
// leaves out gets a Warning Event on its Trigger.
package main

import (
	"context"
	"log"
	"os"
	"os/signal"
	"strconv"
	"syscall"

	cloudevents "github.com/cloudevents/sdk-go/v2"
	cehttp "github.com/cloudevents/sdk-go/v2/protocol/http"
	"go.uber.org/zap"
	corev1 "k8s.io/api/core/v1"
	apiextensions "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset"
	"k8s.io/client-go/kubernetes"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/record"
	eventing "knative.dev/eventing/pkg/client/clientset/versioned"
	eventingscheme "knative.dev/eventing/pkg/client/clientset/versioned/scheme"

	"github.com/frugal-operator/foo-operator/pkg/streamkeeper"
)

func main() {
	logger, err := zap.NewProduction()
	if err != nil {
		log.Fatal(err)
	}
	port := 8080
	if p := os.Getenv("PORT"); p != "" { // Knative Serving sets it
		if port, err = strconv.Atoi(p); err != nil {
			logger.Fatal("PORT", zap.String("value", p), zap.Error(err))
		}
	}
	cfg, err := rest.InClusterConfig()
	if err != nil {
		logger.Fatal("Failed to read the in-cluster configuration", zap.Error(err))
	}
	kube := kubernetes.NewForConfigOrDie(cfg)
	ev := eventing.NewForConfigOrDie(cfg)
	k := &streamkeeper.Keeper{
		Triggers:  ev.EventingV1(),
		Sources:   ev.SourcesV1(),
		Roles:     kube.RbacV1(),
		CRDs:      apiextensions.NewForConfigOrDie(cfg).ApiextensionsV1(),
		Discovery: kube.Discovery(),
	}
	broadcaster := record.NewBroadcaster()
	broadcaster.StartRecordingToSink(&typedcorev1.EventSinkImpl{Interface: kube.CoreV1().Events("")})
	defer broadcaster.Shutdown()
	r := &streamkeeper.Receiver{
		Keeper:   k,
		Logger:   logger,
		Recorder: broadcaster.NewRecorder(eventingscheme.Scheme, corev1.EventSource{Component: "stream-keeper"}),
	}

	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	if err := r.Keep(ctx); err != nil {
		logger.Error("Failed to keep the source at start; the next event retries", zap.Error(err))
	}
	c, err := cloudevents.NewClientHTTP(cehttp.WithPort(port))
	if err != nil {
		logger.Fatal("Failed to make the receiver", zap.Error(err))
	}
	if err := c.StartReceiver(ctx, r.Receive); err != nil {
		logger.Fatal("The receiver ended", zap.Error(err))
	}
}
