module github.com/gotracer/tracer/goruntime

go 1.26.0

replace github.com/gotracer/tracer => ../

require (
	github.com/gotracer/tracer v0.0.0-00010101000000-000000000000
	github.com/stretchr/testify v1.12.1
	golang.org/x/exp v0.0.0-20261014143641-f0251eb4aa3e
)

require (
	github.com/klauspost/compress v1.20.3 // indirect
	github.com/petermattis/goid v0.0.0-20260820044319-269ab09b5261 // indirect
	go.uber.org/atomic v1.12.0 // indirect
	go.yaml.in/yaml/v3 v3.0.5 // indirect
)
