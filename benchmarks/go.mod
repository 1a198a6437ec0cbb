module github.com/gotracer/tracer/benchmarks

go 1.26.0

require (
	github.com/google/chrometracing v0.0.0-20210413150014-55fded0163e7
	github.com/gotracer/tracer v0.0.0
	github.com/gotracer/tracer/goruntime v0.0.0
	github.com/gotracer/tracer/traceotel v0.0.0
	github.com/petermattis/goid v0.0.0-20260820044319-269ab09b5261
	github.com/stretchr/testify v1.12.1
	go.opentelemetry.io/otel v1.47.0
	go.opentelemetry.io/otel/metric v1.47.0
	go.opentelemetry.io/otel/sdk v1.47.0
	go.opentelemetry.io/otel/sdk/metric v1.47.0
	go.opentelemetry.io/otel/trace v1.47.0
	golang.org/x/exp v0.0.0-20261014143641-f0251eb4aa3e
	golang.org/x/sys v0.48.0
)

require (
	github.com/cespare/xxhash/v2 v2.3.0 // indirect
	github.com/go-logr/logr v1.4.4 // indirect
	github.com/go-logr/stdr v1.2.2 // indirect
	github.com/google/uuid v1.6.0 // indirect
	github.com/klauspost/compress v1.20.3 // indirect
	go.opentelemetry.io/auto/sdk v1.2.1 // indirect
	go.opentelemetry.io/otel/log v1.47.0 // indirect
	go.uber.org/atomic v1.12.0 // indirect
	go.yaml.in/yaml/v3 v3.0.5 // indirect
)

replace github.com/gotracer/tracer => ../

replace github.com/gotracer/tracer/traceotel => ../traceotel

replace github.com/gotracer/tracer/goruntime => ../goruntime
