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

// Package serverlesstest checks, in an operator's tests, what it declares
// against what it does: the ApiServerSources of its config/ against the
// kinds its serverless.Operator names (CheckSources), and its Parts.Settled
// reasons against those its reconciler's table sets (CheckSettled). It is
// apart from package serverless so that the operator's binary does not link
// Eventing's API types.
package serverlesstest
