// Command tracervet runs the tracervet analyzer: go vet -vettool=$(which
// tracervet) ./... reports defer tracer.Span(...) without the final ().
package main

import (
	"github.com/gotracer/tracer/tracervet"
	"golang.org/x/tools/go/analysis/singlechecker"
)

func main() { singlechecker.Main(tracervet.Analyzer) }
