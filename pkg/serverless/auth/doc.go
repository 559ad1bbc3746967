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
// their service account for the sink's audience (Authorization: Bearer); a
// Verifier checks it as knative.dev/eventing's pkg/auth does, with the same
// library (go-oidc: the issuer's discovery and JWKS, the audience, the
// expiry), and admits only the subjects it is given. It starts no informer.
//
// It does not link eventing's pkg/auth: that brings eventing's API packages,
// one of which sets SYSTEM_NAMESPACE to "knative-testing" at init when it is
// unset (knative.dev/pkg/system/testing), and it reaches the issuer only as
// https://kubernetes.default.svc or without credentials. Here the issuer is
// read from the API server the reconciler talks to, with its credentials,
// in a cluster or not.
package auth
