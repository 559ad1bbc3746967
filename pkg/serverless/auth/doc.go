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

// Package auth lets only the event sources wake the reconciler: with
// Knative Eventing's OIDC feature on, sources and brokers attach a JWT of
// their service account for the sink's audience; a Verifier checks it with
// knative.dev/eventing's pkg/auth (against the API server's OIDC discovery
// and JWKS) and admits only the subjects it is given. It starts no
// informer: its feature flags are static, and it needs no EventPolicy.
package auth
