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

package connlimit

import (
	"net"
	"syscall"

	"golang.org/x/sys/unix"
)

// pending tells whether c holds bytes that the server has not read yet: a
// request written while the server was too busy to read it. Such a
// connection is not silent, whatever its state says.
func pending(c net.Conn) bool {
	n := 0
	control(c, func(fd int) { n, _ = unix.IoctlGetInt(fd, unix.TIOCINQ) })
	return n > 0
}

// queued tells whether the kernel holds connections that ln has yet to
// accept: for a listening socket, TCP_INFO's unacked is its accept
// queue's length (tcp_get_info in Linux's net/ipv4/tcp.c).
func queued(ln net.Listener) bool {
	var n uint32
	control(ln, func(fd int) {
		if info, err := unix.GetsockoptTCPInfo(fd, unix.IPPROTO_TCP, unix.TCP_INFO); err == nil {
			n = info.Unacked
		}
	})
	return n > 0
}

// control runs f on the socket of s (a net.Conn or a net.Listener), if it
// has one.
func control(s any, f func(fd int)) {
	sc, ok := s.(syscall.Conn)
	if !ok {
		return
	}
	rc, err := sc.SyscallConn()
	if err != nil {
		return
	}
	_ = rc.Control(func(fd uintptr) { f(int(fd)) })
}
