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

// Package uncached implements the generated listers' interfaces on
// clientsets, so that a reconciler written for listers reads the API server
// directly and holds no informer and no cache: what a reconciler that is
// woken by events and then scaled to zero needs.
//
// Errors keep the lister contract: a missing object is an API NotFound error
// (apierrs.IsNotFound), exactly as a cache-backed lister reports it. The
// lister interfaces take no context: reads use the one the Lister was made
// with (New's), not the reconcile's, so a reconcile's deadline or
// cancellation does not reach them; make Listers with a context that lives
// as long as the reconciler.
package uncached
