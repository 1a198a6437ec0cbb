package tracer

// ReleaseAsyncTracks gives back every parent's track that an async child
// holds (see trackFlags). The examples call it before they run, after
// every test has: a child a test left open holds its parent's flag for
// the rest of the process, and an example's parent whose flag it shares
// would draw its child on a track of its own, where the example shows it
// nested.
func ReleaseAsyncTracks() {
	for i := range trackFlags {
		trackFlags[i].Store(false)
	}
}
