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

// Command dead-letters is the shared stream's dead-letter sink
// (stream/300-broker.yaml): it logs every CloudEvent the broker
// could not deliver, with its attributes, the broker's knativeerror*
// extensions and its data, as eventing's event_display does, and keeps
// nothing else. Built from this module, it is pinned by digest in the
// release with the reconciler.
package main

import (
	"context"
	"fmt"
	"log"
	"os"
	"os/signal"
	"strconv"
	"syscall"

	cloudevents "github.com/cloudevents/sdk-go/v2"
	cehttp "github.com/cloudevents/sdk-go/v2/protocol/http"
)

func main() {
	port := 8080
	if p := os.Getenv("PORT"); p != "" { // Knative Serving sets it
		var err error
		if port, err = strconv.Atoi(p); err != nil {
			log.Fatalf("PORT=%q: %v", p, err)
		}
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	c, err := cloudevents.NewClientHTTP(cehttp.WithPort(port))
	if err != nil {
		log.Fatal(err)
	}
	// One write per event: its lines stay together in the log.
	if err := c.StartReceiver(ctx, func(e cloudevents.Event) {
		fmt.Fprintf(os.Stdout, "cloudevents.Event\n%s", e)
	}); err != nil {
		log.Fatal(err)
	}
}
