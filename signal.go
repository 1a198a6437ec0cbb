package tracer

import (
	"os"
	"os/signal"
	"slices"
	"sync"
	"syscall"
)

// Ending the trace when the program ends abnormally.
//
// A deferred Stop in main covers a normal return and a panic of the main
// goroutine: deferred calls run while a panic unwinds, so the trace is
// written and closed before the program dies.
//
//	func main() {
//		if err := tracer.Start("trace.json"); err != nil {
//			log.Fatal(err)
//		}
//		defer tracer.Stop()
//		tracer.StopOnSignal() // SIGINT, SIGTERM
//		...
//	}
//
// It does not cover a panic in another goroutine, which ends the program
// without running main's deferred calls (defer StopOnPanic at the top of
// such goroutines), os.Exit and log.Fatal, which run no deferred calls at
// all (call Stop first), or a signal (StopOnSignal). Whatever is not
// covered leaves the file as SIGKILL does: every event up to the last
// flush, in a file both viewers open.

// StopOnSignal is for a program that does not handle sigs itself (SIGINT
// and SIGTERM if none are given): when the process receives one, it stops
// the default tracer, writing out and closing its file, and then lets the
// signal do what it would have done without StopOnSignal: it stops
// listening and sends the signal again, so the program dies of it, with
// the exit status that shows it.
//
// A program with its own handler (signal.Notify, signal.NotifyContext)
// must not call it: Go delivers a signal to every channel registered for
// it and cannot tell whether another is, so the program would get each
// signal twice, and a second signal often means "exit now". Such a
// program calls Stop at the end of its own shutdown instead, which also
// keeps the events its shutdown records:
//
//	ctx, cancel := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
//	defer cancel()
//	defer tracer.Stop()
//	serve(ctx) // returns once ctx is done and the shutdown is over
//
// A signal the program ignores when StopOnSignal is called (signal.Ignore,
// or ignored by the parent that started it, as nohup and a shell's
// trap ” INT do) is left alone: it goes on being ignored, and the
// program keeps tracing.
//
// Stop waits for the file at most the stop timeout (WithStopTimeout), so a
// stalled disk delays the exit by that much at most. The returned function
// undoes StopOnSignal.
func StopOnSignal(sigs ...os.Signal) (cancel func()) {
	if len(sigs) == 0 {
		sigs = []os.Signal{os.Interrupt, syscall.SIGTERM}
	}
	// A signal the program ignores (signal.Ignore, or SIG_IGN inherited
	// from the parent, as under nohup or a shell's trap '' INT) must stay
	// ignored: catching it would stop the trace of a program that goes on.
	sigs = slices.DeleteFunc(slices.Clone(sigs), signal.Ignored)
	ch := make(chan os.Signal, 1)
	if len(sigs) > 0 {
		signal.Notify(ch, sigs...)
	}
	done := make(chan struct{})
	go func() {
		select {
		case sig := <-ch:
			// Stop listening first, so a second signal during Stop has
			// its usual effect: a second Ctrl-C ends a slow exit.
			signal.Stop(ch)
			Stop()
			raise(sig)
		case <-done:
		}
	}()
	var once sync.Once
	return func() {
		once.Do(func() {
			signal.Stop(ch)
			close(done)
		})
	}
}

// raise sends sig to the process itself.
func raise(sig os.Signal) {
	p, err := os.FindProcess(os.Getpid())
	if err == nil {
		err = p.Signal(sig)
	}
	if err != nil {
		os.Exit(2) // cannot re-send it (Windows): exit as a Go program does on a fatal error
	}
}

// StopOnPanic stops the default tracer if the calling goroutine panics, and
// lets the panic go on. Defer it at the top of goroutines other than main,
// whose panics end the program without running main's deferred Stop:
//
//	go func() {
//		defer tracer.StopOnPanic()
//		...
//	}()
//
// The panic's message and stack trace are printed as without it.
func StopOnPanic() {
	if r := recover(); r != nil {
		Stop()
		panic(r)
	}
}
