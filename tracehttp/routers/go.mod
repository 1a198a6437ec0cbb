module github.com/gotracer/tracer/tracehttp/routers

go 1.26.0

require (
	github.com/go-chi/chi/v5 v5.5.0
	github.com/gorilla/mux v1.8.1
	github.com/gotracer/tracer v0.0.0
	github.com/stretchr/testify v1.12.1
)

require (
	github.com/klauspost/compress v1.20.3 // indirect
	github.com/petermattis/goid v0.0.0-20260820044319-269ab09b5261 // indirect
	go.uber.org/atomic v1.12.0 // indirect
	go.yaml.in/yaml/v3 v3.0.5 // indirect
)

replace github.com/gotracer/tracer => ../..
