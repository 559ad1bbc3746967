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

package serverless

import (
	"context"
	"flag"
	"io"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/kelseyhightower/envconfig"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"

	"github.com/frugal-operator/foo-operator/pkg/serverless/auth"
	"github.com/frugal-operator/foo-operator/pkg/serverless/receiver"
)

func TestSettings(t *testing.T) {
	tests := []struct {
		name     string
		env      map[string]string
		args     []string
		want     receiver.Options
		wantOIDC auth.Config
		wantErr  bool
	}{{
		name: "defaults",
		want: receiver.Options{Name: "op", Port: 8080, AckDeadline: 30 * time.Second, ColdStartResync: true},
	}, {
		name: "from the environment",
		env:  map[string]string{"PORT": "9000", "ACK_DEADLINE": "5s", "ACK": "queued"},
		want: receiver.Options{Name: "op", Port: 9000, AckDeadline: 5 * time.Second, ColdStartResync: true, AckOnEnqueue: true},
	}, {
		name: "flags override the environment",
		env:  map[string]string{"PORT": "9000", "COLD_START_RESYNC": "false"},
		args: []string{"--port=9100", "--cold-start-resync", "--workers=8", "--max-failures=2"},
		want: receiver.Options{Name: "op", Port: 9100, AckDeadline: 30 * time.Second, ColdStartResync: true, Workers: 8, MaxFailures: 2},
	}, {
		name: "one interface",
		args: []string{"--host=127.0.0.1", "--port=9100"},
		want: receiver.Options{Name: "op", Address: "127.0.0.1:9100", Port: 9100, AckDeadline: 30 * time.Second, ColdStartResync: true},
	}, {
		name:     "OIDC from the environment",
		env:      map[string]string{"OIDC_AUDIENCE": "aud", "OIDC_SUBJECTS": "system:serviceaccount:a:b,system:serviceaccount:a:c"},
		want:     receiver.Options{Name: "op", Port: 8080, AckDeadline: 30 * time.Second, ColdStartResync: true},
		wantOIDC: auth.Config{Audience: "aud", Subjects: []string{"system:serviceaccount:a:b", "system:serviceaccount:a:c"}},
	}, {
		name:     "OIDC flags override it",
		env:      map[string]string{"OIDC_AUDIENCE": "aud", "OIDC_SUBJECTS": "x"},
		args:     []string{"--oidc-audience=other", "--oidc-subjects=y,z", "--oidc-discovery-base-url=https://issuer"},
		want:     receiver.Options{Name: "op", Port: 8080, AckDeadline: 30 * time.Second, ColdStartResync: true},
		wantOIDC: auth.Config{Audience: "other", Subjects: []string{"y", "z"}, DiscoveryBaseURL: "https://issuer"},
	}, {
		name:    "ack queued needs the cold-start resync",
		args:    []string{"--ack=queued", "--cold-start-resync=false"},
		wantErr: true,
	}, {
		name:    "buckets need the system namespace",
		args:    []string{"--buckets=4"},
		wantErr: true,
	}, {
		name:    "buckets are not for ack queued",
		args:    []string{"--buckets=4", "--system-namespace=s", "--ack=queued"},
		wantErr: true,
	}, {
		name:    "unknown ack",
		args:    []string{"--ack=later"},
		wantErr: true,
	}}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			for k, v := range tc.env {
				t.Setenv(k, v)
			}
			var e env
			if err := envconfig.Process("", &e); err != nil {
				t.Fatal("envconfig.Process() =", err)
			}
			fs := flag.NewFlagSet("test", flag.ContinueOnError)
			fs.SetOutput(io.Discard)
			set := registerFlags(fs, e, "op")
			if err := fs.Parse(tc.args); err != nil {
				t.Fatal("Parse() =", err)
			}
			if diff := cmp.Diff(tc.wantOIDC, *set.oidc); diff != "" {
				t.Error("OIDC (-want, +got):", diff)
			}
			opts, err := set.options()
			if (err != nil) != tc.wantErr {
				t.Fatalf("options() = %v, want an error: %v", err, tc.wantErr)
			}
			if err != nil {
				return
			}
			// Zero the size limits: they default to the receiver's defaults.
			opts.MaxBodyBytes, opts.MaxInflightBytes, opts.MaxInflightEvents, opts.MaxConnections = 0, 0, 0, 0
			if tc.want.Workers == 0 {
				tc.want.Workers = receiver.DefaultWorkers
			}
			if tc.want.MaxFailures == 0 {
				tc.want.MaxFailures = receiver.DefaultMaxFailures
			}
			if diff := cmp.Diff(tc.want, *opts); diff != "" {
				t.Error("Options (-want, +got):", diff)
			}
		})
	}
}

func TestBadEnvironmentIsAnError(t *testing.T) {
	t.Setenv("ACK_DEADLINE", "soon")
	var e env
	if err := envconfig.Process("", &e); err == nil {
		t.Error("envconfig.Process() = nil, want an error for ACK_DEADLINE=soon")
	}
}

func TestRequeueSchedule(t *testing.T) {
	cfg := &rest.Config{Host: "https://127.0.0.1:1"}
	for _, tc := range []struct {
		name    string
		env     map[string]string
		args    []string
		want    string // the PingSource, "" none
		wantErr bool
	}{
		{name: "not in a Knative Service: none"},
		{name: "in a Knative Service", env: map[string]string{"K_SERVICE": "svc", "SYSTEM_NAMESPACE": "sys"}, want: "svc-requeue"},
		{name: "named by the environment", env: map[string]string{"K_SERVICE": "svc", "SYSTEM_NAMESPACE": "sys", "REQUEUE_SCHEDULE": "later"}, want: "later"},
		{name: "turned off", env: map[string]string{"K_SERVICE": "svc", "SYSTEM_NAMESPACE": "sys"}, args: []string{"--requeue-schedule=none"}},
		{name: "no namespace to keep it in", env: map[string]string{"K_SERVICE": "svc"}, wantErr: true},
		{name: "no Service to ping", env: map[string]string{"SYSTEM_NAMESPACE": "sys"}, args: []string{"--requeue-schedule=later"}, wantErr: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for _, k := range []string{"K_SERVICE", "SYSTEM_NAMESPACE", "REQUEUE_SCHEDULE"} {
				t.Setenv(k, tc.env[k])
			}
			var e env
			if err := envconfig.Process("", &e); err != nil {
				t.Fatal(err)
			}
			fs := flag.NewFlagSet("test", flag.ContinueOnError)
			set := registerFlags(fs, e, "op")
			if err := fs.Parse(tc.args); err != nil {
				t.Fatal(err)
			}
			s, err := set.requeueSchedule(cfg, e.KService)
			if (err != nil) != tc.wantErr {
				t.Fatalf("requeueSchedule() = %v, want an error: %v", err, tc.wantErr)
			}
			if got := set.requeue; err == nil && (s == nil) != (tc.want == "") {
				t.Errorf("schedule %v for --requeue-schedule=%q, want %q", s, got, tc.want)
			}
			if tc.want != "" && set.requeue != tc.want {
				t.Errorf("--requeue-schedule = %q, want %q", set.requeue, tc.want)
			}
		})
	}
}

func TestTheSpreadsIdentity(t *testing.T) {
	for _, tc := range []struct {
		name, apiServer string
		args            []string
		want            string
	}{
		{"from the route to the API server", "https://127.0.0.1:6443", nil, "127.0.0.1:8080"},
		{"without a scheme", "127.0.0.1:6443", []string{"--port=9100"}, "127.0.0.1:9100"},
		{"the interface listened on", "https://127.0.0.1:6443", []string{"--host=127.0.0.2"}, "127.0.0.2:8080"},
		{"as told", "https://127.0.0.1:6443", []string{"--advertise-address=pod:1"}, "pod:1"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fs := flag.NewFlagSet("test", flag.ContinueOnError)
			set := registerFlags(fs, env{Port: 8080, Ack: "reconciled", LogLevel: "info"}, "op")
			if err := fs.Parse(append(tc.args, "--buckets=3", "--system-namespace=system")); err != nil {
				t.Fatal(err)
			}
			if _, err := set.options(); err != nil {
				t.Fatal(err)
			}
			s, err := set.spread(&rest.Config{Host: tc.apiServer}, "op")
			if err != nil {
				t.Fatal(err)
			}
			if got := s.Identity(); got != tc.want {
				t.Errorf("Identity() = %q, want %q", got, tc.want)
			}
		})
	}
}

// WATCH_NAMESPACE, or --namespace, scopes the resyncs: a resync of every
// namespace lists that one alone, a burst's of another lists nothing.
func TestANamespaceScopesTheResyncs(t *testing.T) {
	t.Setenv("WATCH_NAMESPACE", "team")
	var e env
	if err := envconfig.Process("", &e); err != nil {
		t.Fatal(err)
	}
	set := registerFlags(flag.NewFlagSet("test", flag.ContinueOnError), e, "op")
	var asked [][]string
	list := inNamespace(set.namespace, func(_ context.Context, namespaces ...string) ([]types.NamespacedName, []types.NamespacedName, error) {
		asked = append(asked, namespaces)
		return nil, nil, nil
	})
	for _, namespaces := range [][]string{nil, {"team"}, {"other"}, {"other", "team"}} {
		if _, _, err := list(context.Background(), namespaces...); err != nil {
			t.Fatal(err)
		}
	}
	if want := [][]string{{"team"}, {"team"}, {"team"}}; !cmp.Equal(want, asked) {
		t.Errorf("listed %v, want %v", asked, want)
	}
}
