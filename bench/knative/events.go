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

package main

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	cehttp "github.com/cloudevents/sdk-go/v2/protocol/http"
	apierrs "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/frugal-operator/foo-operator/test/onenode"
)

// With -count-stream, the bench counts what the shared stream carries
// during each burst on it: a Trigger on the stream's Broker with no filter
// delivers every event to a sink in this process. That Trigger costs every
// event one more delivery, so those bursts' times are not comparable with a
// run's without it.

// countTrigger is the Trigger that delivers to the sink.
const countTrigger = "bench-count"

// eventCount is how many events of one type and kind the stream carried,
// and their data's size.
type eventCount struct {
	Kind       string `json:"kind"`
	APIVersion string `json:"apiVersion"`
	// Type is the ApiServerSource's event type without its prefix: add,
	// update or delete.
	Type   string `json:"type"`
	Events int    `json:"events"`
	Bytes  int    `json:"bytes"`
}

// streamCounter counts the events the sink receives, by kind and type.
type streamCounter struct {
	srv *http.Server

	mu     sync.Mutex
	counts map[eventCount]*eventCount // keyed by kind, apiVersion and type
	bad    int                        // requests that were not CloudEvents
}

// startCounting serves the sink on the node's bridge and makes the Trigger
// that feeds it, ready.
func startCounting(ctx context.Context) (*streamCounter, error) {
	// On the node's address: the broker's pods reach the sink there.
	l, err := net.Listen("tcp", net.JoinHostPort(onenode.NodeIP, "0"))
	if err != nil {
		return nil, fmt.Errorf("the stream's counting sink: %w", err)
	}
	c := &streamCounter{counts: map[eventCount]*eventCount{}}
	c.srv = &http.Server{Handler: c, ReadHeaderTimeout: 10 * time.Second}
	go c.srv.Serve(l) //nolint:errcheck // ends with stop
	trigger := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "eventing.knative.dev/v1",
		"kind":       "Trigger",
		"metadata":   map[string]any{"name": countTrigger, "namespace": streamNS},
		"spec": map[string]any{
			"broker":     "operators",
			"subscriber": map[string]any{"uri": "http://" + l.Addr().String() + "/"},
		},
	}}
	triggers := dyn.Resource(triggerGVR).Namespace(streamNS)
	if err := triggers.Delete(ctx, countTrigger, metav1.DeleteOptions{}); err != nil && !apierrs.IsNotFound(err) {
		return nil, errors.Join(fmt.Errorf("deleting the last run's %s Trigger: %w", countTrigger, err), c.srv.Close())
	}
	if _, err := triggers.Create(ctx, trigger, metav1.CreateOptions{}); err != nil {
		return nil, errors.Join(fmt.Errorf("making the %s Trigger: %w", countTrigger, err), c.srv.Close())
	}
	if err := poll(ctx, time.Second, 2*time.Minute, "the "+countTrigger+" Trigger ready", func(ctx context.Context) (bool, error) {
		return ready(ctx, triggerGVR, streamNS, countTrigger)
	}); err != nil {
		return nil, errors.Join(err, c.stop(ctx))
	}
	return c, nil
}

// ServeHTTP counts one event and accepts it.
func (c *streamCounter) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	e, err := cehttp.NewEventFromHTTPRequest(r)
	c.mu.Lock()
	defer c.mu.Unlock()
	if err != nil {
		c.bad++
		http.Error(w, "not a CloudEvent: "+err.Error(), http.StatusBadRequest)
		return
	}
	key := eventCount{Type: strings.TrimPrefix(e.Type(), "dev.knative.apiserver.resource.")}
	key.Kind, _ = e.Extensions()["kind"].(string)
	key.APIVersion, _ = e.Extensions()["apiversion"].(string)
	n := c.counts[key]
	if n == nil {
		n = &eventCount{Kind: key.Kind, APIVersion: key.APIVersion, Type: key.Type}
		c.counts[key] = n
	}
	n.Events++
	n.Bytes += len(e.Data())
	w.WriteHeader(http.StatusAccepted)
}

// take returns the counts since the last take, by kind and type, and
// starts again from zero.
func (c *streamCounter) take() ([]eventCount, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	var counts []eventCount
	for _, n := range c.counts {
		counts = append(counts, *n)
	}
	slices.SortFunc(counts, func(x, y eventCount) int {
		return cmp.Or(cmp.Compare(x.Kind, y.Kind), cmp.Compare(x.APIVersion, y.APIVersion), cmp.Compare(x.Type, y.Type))
	})
	bad := c.bad
	c.counts, c.bad = map[eventCount]*eventCount{}, 0
	if bad > 0 {
		return counts, fmt.Errorf("the stream's counting sink received %d requests that were not CloudEvents", bad)
	}
	return counts, nil
}

// stop deletes the Trigger and stops the sink.
func (c *streamCounter) stop(ctx context.Context) error {
	err := dyn.Resource(triggerGVR).Namespace(streamNS).Delete(ctx, countTrigger, metav1.DeleteOptions{})
	if apierrs.IsNotFound(err) {
		err = nil
	}
	return errors.Join(err, c.srv.Close())
}
