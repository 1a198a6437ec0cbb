module github.com/gotracer/tracer

go 1.26

require (
	github.com/klauspost/compress v1.20.3
	github.com/petermattis/goid v0.0.0-20260820044319-269ab09b5261
	github.com/stretchr/testify v1.12.1
	go.uber.org/atomic v1.12.0
)

require go.yaml.in/yaml/v3 v3.0.5 // indirect
