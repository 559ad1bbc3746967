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

package receiver

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	cloudevents "github.com/cloudevents/sdk-go/v2"
	"github.com/cloudevents/sdk-go/v2/binding"
	cehttp "github.com/cloudevents/sdk-go/v2/protocol/http"
	"k8s.io/apimachinery/pkg/util/wait"
)

// postEvent POSTs e in binary mode through client.
func postEvent(ctx context.Context, client *http.Client, url string, e cloudevents.Event) (int, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, nil)
	if err != nil {
		return 0, err
	}
	if err := cehttp.WriteRequest(ctx, binding.ToMessage(&e), req); err != nil {
		return 0, err
	}
	resp, err := client.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	_, err = io.Copy(io.Discard, resp.Body)
	return resp.StatusCode, err
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	if err := wait.PollUntilContextTimeout(context.Background(), 5*time.Millisecond, 10*time.Second, true,
		func(context.Context) (bool, error) { return cond(), nil }); err != nil {
		t.Fatal("waiting for", what)
	}
}

// SIGTERM in the middle of a burst of more events than MaxConnections: every
// connection gets an HTTP answer (200 for what was reconciled, 503 for what
// will not be) or, after the listener closed, is refused; none is reset.
func TestShutdownMidBurstAnswersOrRefusesEveryConnection(t *testing.T) {
	const (
		events = 300
		max    = 30
	)
	release := make(chan struct{})
	rec := newFakeReconciler(func(context.Context, string) error { <-release; return nil })
	// Every connection busy with an event, the rest queued in the kernel.
	ts := startServer(t, rec, Options{MaxConnections: max, MaxInflightEvents: max})

	client := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}}
	var (
		mu      sync.Mutex
		codes   = map[int]int{}
		refused int
		failed  []string
	)
	var wg sync.WaitGroup
	for i := range events {
		wg.Go(func() {
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			code, err := postEvent(ctx, client, ts.url, fooResourceEvent("add", "ns", fmt.Sprint("f", i)))
			mu.Lock()
			defer mu.Unlock()
			switch {
			case err == nil:
				codes[code]++
			case errors.Is(err, syscall.ECONNREFUSED):
				refused++
			default:
				failed = append(failed, err.Error())
			}
		})
	}
	waitFor(t, "the cap's worth of events in flight", func() bool { return ts.srv.intake.inflight.Load() == max })
	ts.stop()
	close(release)
	wg.Wait()
	err := <-ts.done
	ts.done <- err

	t.Logf("answers %v, refused %d, failed %d", codes, refused, len(failed))
	if len(failed) > 0 {
		t.Errorf("%d of %d events got no HTTP answer, e.g. %s", len(failed), events, strings.Join(failed, "; "))
	}
	for code, n := range codes {
		if code != http.StatusOK && code != http.StatusServiceUnavailable {
			t.Errorf("%d events answered %d, want 200 or 503", n, code)
		}
	}
	if codes[http.StatusServiceUnavailable] == 0 {
		t.Error("no event answered 503: SIGTERM was not mid-burst")
	}
}

// SIGTERM in the middle of a burst sent on kept-alive connections, by more
// senders than MaxConnections: every request written gets an HTTP answer
// (200, or 503 while shutting down); a sender may only be refused a
// connection, before it sends. Then the senders stop: the drain needs no
// idle connection closed under a sender.
func TestShutdownMidBurstAnswersEveryKeptAliveRequest(t *testing.T) {
	const (
		senders = 300
		max     = 100
		before  = 3000 // events answered before SIGTERM
	)
	rec := newFakeReconciler(nil)
	go func() {
		for range rec.started {
		}
	}()
	ts := startServer(t, rec, Options{MaxConnections: max})
	t.Cleanup(func() { close(rec.started) })

	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: senders}}
	defer client.CloseIdleConnections()
	var (
		mu       sync.Mutex
		codes    = map[int]int{}
		refused  int
		failed   []string
		answered atomic.Int64
		stopping sync.Once
	)
	var wg sync.WaitGroup
	for i := range senders {
		wg.Go(func() {
			for j := 0; ; j++ {
				ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
				code, err := postEvent(ctx, client, ts.url, fooResourceEvent("update", "ns", fmt.Sprint("f", i, "-", j%3)))
				cancel()
				mu.Lock()
				switch {
				case err == nil:
					codes[code]++
				case refusedBeforeSending(err):
					refused++
				default:
					failed = append(failed, err.Error())
				}
				mu.Unlock()
				if err != nil || code != http.StatusOK {
					return
				}
				if answered.Add(1) == before {
					stopping.Do(ts.stop)
				}
			}
		})
	}
	wg.Wait()
	err := <-ts.done
	ts.done <- err

	t.Logf("answers %v, refused %d, failed %d", codes, refused, len(failed))
	if len(failed) > 0 {
		t.Errorf("%d requests got no HTTP answer, e.g. %s", len(failed), strings.Join(failed[:min(3, len(failed))], "; "))
	}
	if codes[http.StatusServiceUnavailable] == 0 {
		t.Error("no event answered 503: SIGTERM was not mid-burst")
	}
}

// refusedBeforeSending tells whether err is a connection that failed before
// a request was written on it: refused, or reset while connecting, as the
// listener closes.
func refusedBeforeSending(err error) bool {
	var op *net.OpError
	return errors.As(err, &op) && op.Op == "dial"
}
