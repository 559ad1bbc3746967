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

// Package requeue keeps the keys that a reconcile asked to be run again
// later (controller.NewRequeueAfter) where a pod that scales to zero does not
// lose them: in a PingSource of the operator's namespace, which Knative
// Eventing's PingSource adapter (always on, shared by every PingSource)
// fires at the minute the first of them is due, to the operator's Service.
//
// The workqueue requeues such a key after its delay too, but only while the
// pod lives; a reconciler that scales to zero 30 s after its last event
// would otherwise run the key again only when something else wakes it. The
// same holds for a key whose reconcile failed (the adapter gives up on its
// event after a few seconds): a key whose last reconcile failed when the
// process ends is scheduled Retry later.
//
// The PingSource is the schedule's only state: its annotation maps each key
// to the time it is due, and its cron schedule is that of the first. A
// Schedule reads it once (Load), changes it as reconciles finish
// (Reconciled), and writes it when it changed (Run); the PingSource is made
// when a key is first scheduled and deleted when none is left. A ping is a
// resync: the keys due are added to what the resync reconciles (Lister),
// and so are they at a cold start, for a ping that was lost.
package requeue
