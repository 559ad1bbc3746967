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

// Package burst tells when owners created or changed are many enough to be
// met by a resync, and of which namespaces.
//
// Their events come one at a time from a direct adapter, or from a broker
// that waits for each answer, and each waits for its own reconcile; a
// resync lists every owner that needs work at once, and the workers
// reconcile them together. It lists the namespaces of the burst's owners
// only (if few): its cost is the burst's, not the rest of the cluster's.
// The creations' events then find their owners written (the receiver's
// Decoder.OwnWrites) and are answered at once; a change's event still runs a
// reconcile of its owner (the resync's own, if that one is still queued),
// which then writes nothing. A burst's resync lasts until what it listed is
// reconciled: a resync before then would list the same owners again.
package burst
