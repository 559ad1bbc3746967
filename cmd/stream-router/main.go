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

// Command stream-router routes the shared stream's events to its members
// (pkg/streamrouter): the one pod of a Deployment that the broker sends
// every event of the stream's adapter, on $PORT, and that answers each with
// the event named for the members it is for.
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
	"k8s.io/client-go/rest"
	eventing "knative.dev/eventing/pkg/client/clientset/versioned"

	"github.com/frugal-operator/foo-operator/pkg/streamrouter"
)

func main() {
	logger, err := zap.NewProduction()
	if err != nil {
		log.Fatal(err)
	}
	port := 8080
	if p := os.Getenv("PORT"); p != "" {
		if port, err = strconv.Atoi(p); err != nil {
			logger.Fatal("PORT", zap.String("value", p), zap.Error(err))
		}
	}
	cfg, err := rest.InClusterConfig()
	if err != nil {
		logger.Fatal("Failed to read the in-cluster configuration", zap.Error(err))
	}
	r, err := streamrouter.New(eventing.NewForConfigOrDie(cfg).EventingV1(), logger)
	if err != nil {
		logger.Fatal("Failed to make the router", zap.Error(err))
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	c, err := cloudevents.NewClientHTTP(cehttp.WithPort(port))
	if err != nil {
		logger.Fatal("Failed to make the receiver", zap.Error(err))
	}
	if err := c.StartReceiver(ctx, r.Route); err != nil {
		logger.Fatal("The receiver ended", zap.Error(err))
	}
}
