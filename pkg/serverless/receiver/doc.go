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

// Package receiver feeds a knative.dev/pkg controller.Impl from CloudEvents
// instead of informers, and answers each event only once the keys it maps to
// have been reconciled.
//
// It exists so that a reconciler can run as a Knative Service that scales to
// zero: ApiServerSource (for the watched objects and the objects they own)
// and PingSource (for resyncs) send events, the receiver turns each into
// owner keys, and the HTTP response is held until a reconcile of every key that
// started after the event arrived has finished. Success answers an empty 2xx;
// a transient failure or the deadline answers 503, so that the adapter or the
// broker delivers the event again; nothing is acknowledged that was not done.
package receiver
