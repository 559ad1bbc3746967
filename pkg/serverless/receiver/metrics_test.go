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
	"net/http"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"go.opentelemetry.io/otel/attribute"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	"k8s.io/apimachinery/pkg/types"
	"knative.dev/pkg/controller"
)

// collected reads the reader's metrics as "name{attr=value,...}" -> the
// counter's sum or the histogram's count.
func collected(t *testing.T, r sdkmetric.Reader) map[string]int64 {
	t.Helper()
	var rm metricdata.ResourceMetrics
	if err := r.Collect(context.Background(), &rm); err != nil {
		t.Fatal("Collect() =", err)
	}
	name := func(n string, set attribute.Set) string {
		var kv []string
		for _, a := range set.ToSlice() {
			kv = append(kv, string(a.Key)+"="+a.Value.Emit())
		}
		return n + "{" + strings.Join(kv, ",") + "}"
	}
	out := map[string]int64{}
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			switch d := m.Data.(type) {
			case metricdata.Sum[int64]:
				for _, p := range d.DataPoints {
					out[name(m.Name, p.Attributes)] = p.Value
				}
			case metricdata.Histogram[float64]:
				for _, p := range d.DataPoints {
					out[name(m.Name, p.Attributes)+".count"] = int64(p.Count)
				}
			case metricdata.Histogram[int64]:
				for _, p := range d.DataPoints {
					out[name(m.Name, p.Attributes)+".count"] = int64(p.Count)
					out[name(m.Name, p.Attributes)+".sum"] = p.Sum
				}
			}
		}
	}
	return out
}

func TestMetricsCountWhatWasAnswered(t *testing.T) {
	reader := sdkmetric.NewManualReader()
	rec := newFakeReconciler(func(_ context.Context, key string) error {
		if key == "ns/broken" {
			return controller.NewPermanentError(errors.New("not owned"))
		}
		return nil
	})
	ts := startServer(t, rec, Options{ColdStartResync: true, MeterProvider: sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))},
		types.NamespacedName{Namespace: "ns", Name: "a"}, types.NamespacedName{Namespace: "ns", Name: "b"})

	for _, tc := range []struct {
		e    func() (int, error)
		want int
	}{
		{func() (int, error) { return send(t, ts.url, fooResourceEvent("add", "ns", "one"), false).code, nil }, http.StatusOK},
		{func() (int, error) { return send(t, ts.url, fooResourceEvent("add", "ns", "broken"), true).code, nil }, http.StatusOK},
		{func() (int, error) { return send(t, ts.url, pingEvent(), false).code, nil }, http.StatusOK},
		{func() (int, error) {
			return send(t, ts.url, deploymentResourceEvent("add", "ns", "unowned", ""), false).code, nil
		}, http.StatusAccepted},
		{func() (int, error) {
			e := fooResourceEvent("add", "ns", "x")
			e.SetType("com.example.whatever")
			return send(t, ts.url, e, false).code, nil
		}, http.StatusAccepted},
		{func() (int, error) {
			resp, err := http.Post(ts.url, "application/json", strings.NewReader("{}"))
			if err != nil {
				return 0, err
			}
			resp.Body.Close()
			return resp.StatusCode, nil
		}, http.StatusBadRequest},
	} {
		if got, err := tc.e(); err != nil || got != tc.want {
			t.Fatalf("answer = %d, %v; want %d", got, err, tc.want)
		}
	}

	// The cold-start resync runs beside the events: wait for it to be counted.
	var got map[string]int64
	waitFor(t, "the cold-start resync counted", func() bool {
		got = collected(t, reader)
		return got["serverless.resync.duration{trigger=cold_start}.count"] > 0
	})
	add, ping := "dev.knative.apiserver.resource.add", PingEventType
	want := map[string]int64{
		"serverless.cold_starts{}":                                              1,
		"serverless.events{outcome=reconciled,type=" + add + "}":                2,
		"serverless.events{outcome=reconciled,type=" + ping + "}":               1,
		"serverless.events{outcome=ignored,type=" + add + "}":                   1,
		"serverless.events{outcome=ignored,type=other}":                         1,
		"serverless.events{outcome=bad,type=}":                                  1,
		"serverless.event.duration{outcome=reconciled,type=" + add + "}.count":  2,
		"serverless.event.duration{outcome=reconciled,type=" + ping + "}.count": 1,
		"serverless.event.duration{outcome=ignored,type=" + add + "}.count":     1,
		"serverless.event.duration{outcome=ignored,type=other}.count":           1,
		"serverless.event.duration{outcome=bad,type=}.count":                    1,
		"serverless.resync.keys{trigger=cold_start}.count":                      1,
		"serverless.resync.keys{trigger=cold_start}.sum":                        2,
		"serverless.resync.keys{trigger=ping}.count":                            1,
		"serverless.resync.keys{trigger=ping}.sum":                              2,
		"serverless.resync.duration{trigger=cold_start}.count":                  1,
		"serverless.resync.duration{trigger=ping}.count":                        1,
		"serverless.reconciles{outcome=permanent_error}":                        1,
	}
	// Reconciles: one, the ping's two keys, and the cold start's two, some
	// of which the ping's may have shared.
	success := got["serverless.reconciles{outcome=success}"]
	if success < 3 || success > 5 {
		t.Errorf("successful reconciles = %d, want 3 to 5", success)
	}
	delete(got, "serverless.reconciles{outcome=success}")
	if diff := cmp.Diff(want, got); diff != "" {
		t.Error("metrics (-want, +got):", diff)
	}
}

// denyAll is a Verifier that refuses every request.
type denyAll struct{ code int }

func (d denyAll) Verify(w http.ResponseWriter, _ *http.Request) (inOrder, ok bool) {
	http.Error(w, "no", d.code)
	return false, false
}

// A request the Verifier refuses reaches nothing: no reconcile, no resync.
func TestRefusedSendersReachNothing(t *testing.T) {
	reader := sdkmetric.NewManualReader()
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
	rec := newFakeReconciler(nil)
	for _, code := range []int{http.StatusUnauthorized, http.StatusForbidden} {
		ts := startServer(t, rec, Options{Verifier: denyAll{code}, MeterProvider: mp},
			types.NamespacedName{Namespace: "ns", Name: "a"})
		for _, e := range []func() int{
			func() int { return send(t, ts.url, fooResourceEvent("add", "ns", "one"), false).code },
			func() int { return send(t, ts.url, pingEvent(), true).code },
		} {
			if got := e(); got != code {
				t.Errorf("answer = %d, want %d", got, code)
			}
		}
	}
	if n := rec.callsOf("ns/one") + rec.callsOf("ns/a"); n != 0 {
		t.Errorf("%d reconciles, want none", n)
	}
	if got := collected(t, reader)["serverless.events{outcome=denied,type=}"]; got != 4 {
		t.Errorf("denied events = %d, want 4", got)
	}
}
