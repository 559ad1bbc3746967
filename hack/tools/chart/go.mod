// Module chart draws the benchmark's PNG chart. It is separate from the
// product's go.mod so that golang.org/x/image stays out of it.
module github.com/frugal-operator/foo-operator/hack/tools/chart

go 1.25.0

require golang.org/x/image v0.24.0
