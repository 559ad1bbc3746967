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

// Package serverless runs an operator written on knative.dev/pkg's generated
// reconciler as a Knative Service that scales to zero: no informer, no
// leader election, no ConfigMap watch; CloudEvents from ApiServerSource,
// PingSource or a broker wake it, and each is answered once the keys it maps
// to are reconciled. The reconciler reconciles owners; the objects an owner
// controls (its owned objects) wake it when they change. An operator's main
// is a call to Main with the operator's kinds, each declared once, here
// Knative Eventing's ContainerSource reconciler's
// (examples/containersource), which owns Deployments (labelled with their
// owner's name) and SinkBindings:
//
//	func main() {
//		serverless.Main(serverless.Operator{
//			Name:  "containersource-reconciler",
//			Owner: serverless.Kind{Resource: sourcesv1.SchemeGroupVersion.WithResource("containersources"), Kind: "ContainerSource"},
//			Owned: []serverless.Owned{
//				{Kind: serverless.Kind{Resource: appsv1.SchemeGroupVersion.WithResource("deployments"), Kind: "Deployment"},
//					OwnerLabel: "sources.knative.dev/containerSource"},
//				{Kind: serverless.Kind{Resource: sourcesv1.SchemeGroupVersion.WithResource("sinkbindings"), Kind: "SinkBinding"}},
//			},
//			Scheme: eventingscheme.Scheme,
//			New:    containersource.New,
//		})
//	}
//
// Main parses the flags and environment, builds the logger, the API
// clients (those the generated injection packages register) and the event
// recorder, asks the operator for its Parts (refusing to start if they or
// the kinds are not what it can serve), and serves events until
// SIGTERM, then drains: the events in flight are answered. The operator's
// reconciler is unchanged: Main wraps the clients it is given.
//
// Its subpackages are the parts, for an operator that wires itself:
// receiver (events to keys to the workqueue), uncached (the generated lister
// interfaces, answered by the API server; cmd/uncached-lister-gen writes
// them for an operator's listers), resync (which owners need work:
// the reconciler run over what a resync lists, its writes refused), ownwrites (what the reconciler's clients write, recognised
// when its events come back), handoff (the objects believable events
// carried, read in place of the API server's), auth (only the event
// sources' OIDC identities may send) and configwatch (the
// configmap.Watcher that New is given).
package serverless
