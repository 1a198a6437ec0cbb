package main

import "testing"

func TestMaskArgValues(t *testing.T) {
	for in, want := range map[string]string{
		`{"name":"x","ph":"X","args":{"a":1,"b":"x,y","c":true}},`: `{"name":"x","ph":"X","args":{"a":V,"b":V,"c":V}},`,
		`{"name":"x","args":{"e":"say \"hi\", ok","n":-1.5}},`:     `{"name":"x","args":{"e":V,"n":V}},`,
		`{"name":"x","ph":"i"},`:                                   `{"name":"x","ph":"i"},`,
	} {
		if got := maskArgValues(in); got != want {
			t.Errorf("%s: got %s want %s", in, got, want)
		}
	}
}
