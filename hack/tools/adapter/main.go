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

// Command apiserver-receive-adapter is knative.dev/eventing's ApiServerSource
// receive adapter, unchanged, with its health listener turned off so that
// several adapters and the reconciler can share one loopback interface. Set
// PROFILING_PORT to a port that cannot be bound to keep its pprof listener
// off too. Set PPROF_ADDR (a 127.0.0.1 address) to serve net/http/pprof there
// instead, as the benchmark does to profile the adapter during a burst.
package main

import (
	"net/http"
	"net/http/pprof"
	"os"

	"knative.dev/eventing/pkg/adapter/apiserver"
	"knative.dev/eventing/pkg/adapter/v2"
	"knative.dev/eventing/pkg/auth"
	"knative.dev/eventing/pkg/eventingtls"
	filteredfactory "knative.dev/pkg/client/injection/kube/informers/factory/filtered"
	"knative.dev/pkg/signals"
)

func main() {
	if addr := os.Getenv("PPROF_ADDR"); addr != "" {
		mux := http.NewServeMux()
		mux.HandleFunc("/debug/pprof/", pprof.Index)
		mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
		go func() { _ = http.ListenAndServe(addr, mux) }()
	}
	ctx := signals.NewContext()
	ctx = adapter.WithInjectorEnabled(ctx)
	ctx = adapter.WithHealthProbesDisabled(ctx)
	ctx = filteredfactory.WithSelectors(ctx, auth.OIDCLabelSelector, eventingtls.TrustBundleLabelSelector)
	adapter.MainWithContext(ctx, "apiserversource", apiserver.NewEnvConfig, apiserver.NewAdapter)
}
