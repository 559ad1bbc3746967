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

// Package handoff hands the object an event carried to the one reconcile of
// its key that follows, in place of reading it from the API server.
//
// It is for what an informer's cache would have answered, and only where an
// event is as good as that cache: the receiver puts an owner's object only
// when its sender is authenticated as one that delivers each object's events
// in order, as its watch saw them (an ApiServerSource adapter wired
// directly), and only an add of an owner never reconciled. Any other event
// about the key forgets what was put: the reconcile then reads. What is put
// is taken once; forgetting costs a read, never a wrong answer.
//
// The reconcile takes it through Store.Transport, which wraps the transport
// of the reconciler's clients: its first GET of the owner is answered with
// it, whatever client or lister makes that GET.
package handoff
