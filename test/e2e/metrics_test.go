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

package e2e

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/frugal-operator/foo-operator/pkg/serverless/receiver"
	"github.com/frugal-operator/foo-operator/test/localenv"
	"github.com/frugal-operator/foo-operator/test/otlp"
)

// 12. Metrics leave the pod by OTLP, the last of them when it stops, and
// add up to what happened: a reconciler started with config-observability
// pointing at a real OTLP receiver, a burst of Foos, a resync, a bad event,
// then SIGTERM.
func TestMetrics(t *testing.T) {
	ctx := context.Background()
	rcv, err := otlp.Start()
	if err != nil {
		t.Fatal(err)
	}
	defer rcv.Close()
	observability := func(data string) {
		t.Helper()
		patch := `{"data":` + data + `}`
		if _, err := env.Kube.CoreV1().ConfigMaps(localenv.Namespace).Patch(ctx, "config-observability", types.MergePatchType,
			[]byte(patch), metav1.PatchOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	// A long export interval: what is seen comes from the export at SIGTERM.
	observability(fmt.Sprintf(`{"metrics-protocol":"http/protobuf","metrics-endpoint":%q,"metrics-export-interval":"10m"}`, rcv.URL))
	t.Cleanup(func() {
		observability(`{"metrics-protocol":"none","metrics-endpoint":null,"metrics-export-interval":null}`)
		_ = env.StopReconciler()
		if err := env.StartReconciler(context.Background()); err != nil {
			t.Error(err)
		}
	})
	if err := env.StopReconciler(); err != nil {
		t.Fatal(err)
	}
	if err := env.StartReconciler(ctx); err != nil {
		t.Fatal(err)
	}

	ns := namespace(t)
	const n = 20
	for i := range n {
		createFoo(t, newFoo(ns, fmt.Sprintf("foo-%d", i), fmt.Sprintf("dep-%d", i), 1))
	}
	eventually(t, "the burst converged", func(ctx context.Context) (bool, string) { return converged(ctx, ns, n) })
	if _, err := env.Resync(ctx); err != nil {
		t.Fatal(err)
	}
	resp, err := http.Post(env.ReconcilerURL, "application/json", strings.NewReader(`{"not":"a cloudevent"}`))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusBadRequest {
		t.Fatalf("a bad event was answered %d, want 400", resp.StatusCode)
	}
	if rcv.Exports() != 0 {
		t.Fatalf("%d exports before SIGTERM; the test wants them all at SIGTERM", rcv.Exports())
	}
	if err := env.StopReconciler(); err != nil {
		t.Fatal(err)
	}
	if rcv.Exports() == 0 {
		t.Fatal("nothing was exported at SIGTERM")
	}

	get := func(name string, attrs map[string]string) float64 {
		v, _ := rcv.Sum(name, attrs)
		return v
	}
	add := "dev.knative.apiserver.resource.add"
	for _, c := range []struct {
		what string
		got  float64
		want float64
	}{
		{"cold starts", get("serverless.cold_starts", nil), 1},
		// Every add is reconciled or ignored: a Foo's, ignored once a
		// burst's resync reconciled the Foo first; an own Deployment's.
		{"adds of Foos and Deployments answered", get("serverless.events", map[string]string{"type": add, "outcome": receiver.OutcomeReconciled}) +
			get("serverless.events", map[string]string{"type": add, "outcome": receiver.OutcomeIgnored}), 2 * n},
		{"pings reconciled", get("serverless.events", map[string]string{"type": receiver.PingEventType, "outcome": receiver.OutcomeReconciled}), 1},
		{"bad events", get("serverless.events", map[string]string{"outcome": receiver.OutcomeBad}), 1},
		{"events answered 503", get("serverless.events", map[string]string{"outcome": receiver.OutcomeUnavailable}), 0},
		{"cold-start resyncs", get("serverless.resync.keys", map[string]string{"trigger": "cold_start"}), 1},
		{"ping resyncs", get("serverless.resync.duration", map[string]string{"trigger": "ping"}), 1},
		{"events timed", get("serverless.event.duration", nil), get("serverless.events", nil)},
		{"reconciles timed", get("kn.workqueue.process.duration", nil), get("serverless.reconciles", nil)},
	} {
		if c.got != c.want {
			t.Errorf("%s = %v, want %v", c.what, c.got, c.want)
		}
	}
	for _, c := range []struct {
		what     string
		got, min float64
	}{
		// The own Deployment adds are ignored; the Deployments' status
		// updates are reconciled.
		{"events ignored", get("serverless.events", map[string]string{"outcome": receiver.OutcomeIgnored}), n},
		{"successful reconciles", get("serverless.reconciles", map[string]string{"outcome": "success"}), n},
		// knative.dev/pkg's own: the workqueue's and the API client's.
		{"workqueue adds", get("kn.workqueue.adds", nil), n},
		// A Deployment create and a status update per Foo, at least.
		{"API requests", get("kn.k8s.client.http.response.status_code", nil), 2 * n},
	} {
		if c.got < c.min {
			t.Errorf("%s = %v, want at least %v", c.what, c.got, c.min)
		}
	}
}
