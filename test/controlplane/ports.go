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
	"fmt"
	"net"
)

// FreePort returns a TCP port on 127.0.0.1 that nothing listens on now. The
// port is not reserved: a process that is to use it should bind it soon, and
// a failure to bind shows up as that process exiting early.
func FreePort() (int, error) {
	ports, err := freePorts(1)
	if err != nil {
		return 0, err
	}
	return ports[0], nil
}

// freePorts returns n distinct free ports on 127.0.0.1, holding all of them
// open until it has them all so that the kernel cannot hand out one twice.
func freePorts(n int) ([]int, error) {
	ports := make([]int, 0, n)
	listeners := make([]net.Listener, 0, n)
	defer func() {
		for _, l := range listeners {
			l.Close()
		}
	}()
	for range n {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, fmt.Errorf("failed to find a free port on 127.0.0.1: %w", err)
		}
		listeners = append(listeners, l)
		ports = append(ports, l.Addr().(*net.TCPAddr).Port)
	}
	return ports, nil
}
