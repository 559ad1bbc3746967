/*
Copyright The Foo Operator Authors.

Licensed under the Apache License, Version 2.0 (the "License");
you may not use this file except in compliance with the License.
You may obtain a copy of the License at

    http://www.apache.org/licenses/LICENSE-2.0

Unless required by applicable law or agreed to in writing, software
distributed under the License is distributed on an "AS IS" BASIS,
WITHOUT WARRANTIES OR CONDITIONS OF ANY KIND, either express or implied.
See the License for the specific language governing permissions and
limitations under the License.
*/

package controlplane

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

const (
	// DefaultStopTimeout is how long Stop waits after SIGTERM before it sends
	// SIGKILL.
	DefaultStopTimeout = 15 * time.Second

	// killTimeout bounds the wait for a process to be reaped after SIGKILL,
	// which only a process stuck in the kernel survives.
	killTimeout = 10 * time.Second

	// logTailBytes is how much of a log an error quotes.
	logTailBytes = 4096
)

// Process is a child process started and tracked by this package. Stop and
// Kill act on the PID this package started, never on a process found by name.
type Process struct {
	// Name identifies the process in errors and in the shared log.
	Name string
	// Cmd is the started command. Do not call its Wait: the Process does.
	Cmd *exec.Cmd
	// LogPath is the file that holds the process's stdout and stderr, or ""
	// if the caller set the command's Stdout or Stderr itself.
	LogPath string

	stopTimeout time.Duration
	done        chan struct{}
	waitErr     error
}

// PID is the process id this package started.
func (p *Process) PID() int {
	return p.Cmd.Process.Pid
}

// Done is closed once the process has exited and been reaped.
func (p *Process) Done() <-chan struct{} {
	return p.done
}

// Wait blocks until the process exits and returns what exec.Cmd.Wait returned.
func (p *Process) Wait() error {
	<-p.done
	return p.waitErr
}

// Exited reports whether the process has exited.
func (p *Process) Exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// Stop sends SIGTERM, waits for the process to exit and sends SIGKILL if it
// has not exited within the stop timeout. Stopping an exited process is a
// no-op; an exit caused by the signal is not an error.
func (p *Process) Stop() error {
	if p.Exited() {
		return nil
	}
	if err := p.Cmd.Process.Signal(syscall.SIGTERM); err != nil && !errors.Is(err, os.ErrProcessDone) {
		return fmt.Errorf("failed to send SIGTERM to %s (pid %d): %w", p.Name, p.PID(), err)
	}
	timer := time.NewTimer(p.stopTimeout)
	defer timer.Stop()
	select {
	case <-p.done:
		return nil
	case <-timer.C:
	}
	p.note("did not exit within %s of SIGTERM; sending SIGKILL", p.stopTimeout)
	return p.Kill()
}

// Kill sends SIGKILL, as a crash would, and waits for the process to be
// reaped.
func (p *Process) Kill() error {
	if p.Exited() {
		return nil
	}
	if err := p.Cmd.Process.Kill(); err != nil && !errors.Is(err, os.ErrProcessDone) {
		return fmt.Errorf("failed to send SIGKILL to %s (pid %d): %w", p.Name, p.PID(), err)
	}
	timer := time.NewTimer(killTimeout)
	defer timer.Stop()
	select {
	case <-p.done:
		return nil
	case <-timer.C:
		return fmt.Errorf("%s (pid %d) has not exited %s after SIGKILL", p.Name, p.PID(), killTimeout)
	}
}

// LogTail returns the last few kilobytes of the process's log, for error
// messages and test failures.
func (p *Process) LogTail() string {
	if p.LogPath == "" {
		return ""
	}
	return tailFile(p.LogPath, logTailBytes)
}

// exitedEarly is the error for a process that exited while it was expected
// to become ready.
func (p *Process) exitedEarly() error {
	return fmt.Errorf("%s (pid %d) exited before it was ready: %v%s", p.Name, p.PID(), p.waitErr, p.logTailForError())
}

func (p *Process) logTailForError() string {
	tail := p.LogTail()
	if tail == "" {
		return ""
	}
	return fmt.Sprintf("\n--- last lines of %s ---\n%s", p.LogPath, tail)
}

// note appends a line of our own to the process's log file.
func (p *Process) note(format string, args ...any) {
	if p.LogPath == "" {
		return
	}
	f, err := os.OpenFile(p.LogPath, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		return
	}
	defer f.Close()
	fmt.Fprintf(f, "controlplane: "+format+"\n", args...)
}

// startProcess starts cmd with its output in a new log file under dir (and,
// if shared is not nil, copied there line by line with a name prefix), and
// makes the kernel kill it if this process dies.
func startProcess(name string, cmd *exec.Cmd, dir string, shared *lineSink, stopTimeout time.Duration) (*Process, error) {
	p := &Process{Name: name, Cmd: cmd, stopTimeout: stopTimeout, done: make(chan struct{})}
	if p.stopTimeout <= 0 {
		p.stopTimeout = DefaultStopTimeout
	}
	setDeathSignal(cmd)

	var logFile *os.File
	var prefixed *lineWriter
	if cmd.Stdout == nil && cmd.Stderr == nil {
		f, err := createLogFile(dir, name)
		if err != nil {
			return nil, err
		}
		logFile, p.LogPath = f, f.Name()
		var out io.Writer = f
		if shared != nil {
			prefixed = shared.writer(name)
			out = io.MultiWriter(f, prefixed)
		}
		// One writer for both streams, so that exec makes one pipe (or none,
		// when out is the file) and lines keep their order.
		cmd.Stdout, cmd.Stderr = out, out
		// Bounds the copy from the pipe should a grandchild keep it open.
		cmd.WaitDelay = 5 * time.Second
	}

	if err := cmd.Start(); err != nil {
		if logFile != nil {
			logFile.Close()
		}
		return nil, fmt.Errorf("failed to start %s (%s): %w", name, cmd.Path, err)
	}
	go func() {
		p.waitErr = cmd.Wait()
		if prefixed != nil {
			prefixed.flush()
		}
		if logFile != nil {
			logFile.Close()
		}
		close(p.done)
	}()
	return p, nil
}

// createLogFile creates dir/name.log, or name-2.log and so on if a process of
// that name has run before.
func createLogFile(dir, name string) (*os.File, error) {
	base := strings.Map(func(r rune) rune {
		if r == '/' || r == os.PathSeparator {
			return '_'
		}
		return r
	}, name)
	for i := 1; i < 1000; i++ {
		file := base + ".log"
		if i > 1 {
			file = base + "-" + strconv.Itoa(i) + ".log"
		}
		f, err := os.OpenFile(filepath.Join(dir, file), os.O_WRONLY|os.O_CREATE|os.O_EXCL|os.O_APPEND, 0o644)
		if errors.Is(err, os.ErrExist) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("failed to create log file for %s: %w", name, err)
		}
		return f, nil
	}
	return nil, fmt.Errorf("failed to create log file for %s: too many logs named %q in %s", name, base, dir)
}

// tailFile returns about the last n bytes of a file, starting at a line.
func tailFile(path string, n int64) string {
	f, err := os.Open(path)
	if err != nil {
		return ""
	}
	defer f.Close()
	info, err := f.Stat()
	if err != nil {
		return ""
	}
	offset := info.Size() - n
	if offset < 0 {
		offset = 0
	}
	b, err := io.ReadAll(io.NewSectionReader(f, offset, info.Size()-offset))
	if err != nil {
		return ""
	}
	if offset > 0 {
		if i := bytes.IndexByte(b, '\n'); i >= 0 {
			b = b[i+1:]
		}
	}
	return strings.TrimRight(string(b), "\n")
}

// lineSink is a writer shared by several processes; a mutex keeps their lines
// whole.
type lineSink struct {
	mu sync.Mutex
	w  io.Writer
}

func (s *lineSink) writer(name string) *lineWriter {
	return &lineWriter{sink: s, prefix: []byte("[" + name + "] ")}
}

// lineWriter writes whole lines, each prefixed with the process's name.
type lineWriter struct {
	sink   *lineSink
	prefix []byte
	buf    []byte
}

func (l *lineWriter) Write(p []byte) (int, error) {
	l.sink.mu.Lock()
	defer l.sink.mu.Unlock()
	l.buf = append(l.buf, p...)
	for {
		i := bytes.IndexByte(l.buf, '\n')
		if i < 0 {
			break
		}
		// The shared writer's errors must not stop the child's output from
		// reaching its own log file.
		_, _ = l.sink.w.Write(append(append([]byte(nil), l.prefix...), l.buf[:i+1]...))
		l.buf = l.buf[i+1:]
	}
	return len(p), nil
}

func (l *lineWriter) flush() {
	l.sink.mu.Lock()
	defer l.sink.mu.Unlock()
	if len(l.buf) > 0 {
		_, _ = l.sink.w.Write(append(append(append([]byte(nil), l.prefix...), l.buf...), '\n'))
		l.buf = nil
	}
}
