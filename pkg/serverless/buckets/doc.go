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

// Package buckets spreads an operator's keys over the processes that serve
// it, so that a Knative Service may run more than one pod and each key is
// still reconciled by one process at a time.
//
// The keys are hashed into a fixed number of buckets (knative.dev/pkg's
// hash.BucketSet), and each bucket is held through a coordination.k8s.io
// Lease, acquired and renewed by client-go's leader election, as Knative's
// own controllers hold theirs. What differs: a process holds only the
// buckets assigned to it, and every process is a member, seen by the others
// through a Lease of its own. The live members share the buckets evenly
// (sorted buckets dealt round the sorted members); when one comes or goes,
// the buckets move: the holder of a bucket that is no longer its own stops
// letting reconciles of its keys in, waits for those running to end, then
// releases the Lease, and the new holder takes it at its next try.
//
// A Lease's holder is the address where that process takes keys (its
// Identity: host:port), so that a process that receives an event for a key
// it does not hold can send the key on to the one that does (see package
// receiver). Leases carry the label LabelKey=<Name>, and are read once per
// RetryPeriod by every member. A member Lease also says when its process
// last began a reconcile (ActiveAnnotation): a process that starts while no
// other member is active is the first to serve after a time when none did,
// even if Knative still drains the last pod of a scale to zero (Settle).
//
// Safety rests on the Leases alone: a process reconciles a key only inside
// Enter, which admits it only while the process leads the key's bucket; a
// process that cannot renew stops leading after RenewDeadline, before the
// Lease expires for the others. Views of the members may differ for a
// moment; then two processes may both try to take a bucket, and the Lease
// lets one.
package buckets
