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

// Package resync answers a resync's question, "which owners need work?", by
// listing the owners and the objects they own, a page at a time, and running
// the operator's own reconciler over what it listed, with its writes refused:
// the owners whose reconcile would write need work. At steady state it costs
// a LIST per page of owners and per owned resource, and writes nothing, where
// a reconcile of each owner would read at least once per owner.
package resync
