package main

import (
	_ "github.com/duckdb/duckdb-go/v2"
)

func main() {}
