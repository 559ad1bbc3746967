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

// Package ownwrites remembers the versions of the objects a reconciler
// wrote, so that the events reporting those very writes (the watch sends
// every write back, including one's own) can be answered without a
// reconcile: they tell the reconciler only what it did.
//
// A version is recognised by its resourceVersion, which the API server gives
// each write; the event that carries it reports that write and no later one.
// A forged event carrying it only skips itself.
//
// The writes are recorded by Record.Transport, which wraps the transport of
// the reconciler's clients: the reconciler itself knows nothing of it.
package ownwrites
