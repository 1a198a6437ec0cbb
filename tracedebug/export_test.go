package tracedebug

// StopTimeout is stopTimeout, for the package's external tests.
var StopTimeout = stopTimeout
