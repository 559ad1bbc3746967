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

package harness

import (
	"fmt"
	"os"
	"strconv"
	"strings"
)

// clockTicks is USER_HZ, the unit of /proc's CPU times: 100 on every Linux this runs on.
const clockTicks = 100

// rss returns a process's resident memory, its peak and its anonymous part
// (the rest is file-backed, mostly the binary's pages), in MiB.
func rss(pid int) (now, peak, anon float64, err error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	kB := map[string]float64{}
	for _, line := range strings.Split(string(b), "\n") {
		if f := strings.Fields(line); len(f) >= 2 {
			kB[f[0]], _ = strconv.ParseFloat(f[1], 64)
		}
	}
	return kB["VmRSS:"] / 1024, kB["VmHWM:"] / 1024, kB["RssAnon:"] / 1024, err
}

// cpuSeconds returns the user and system CPU time a process has used.
func cpuSeconds(pid int) (float64, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, err
	}
	// utime and stime are stat's fields 14 and 15, counted after the command
	// name, which may hold spaces: 12 and 13 from its closing parenthesis.
	f := strings.Fields(string(b[strings.LastIndexByte(string(b), ')')+1:]))
	if len(f) < 13 {
		return 0, fmt.Errorf("short /proc/%d/stat", pid)
	}
	u, _ := strconv.ParseFloat(f[11], 64)
	s, _ := strconv.ParseFloat(f[12], 64)
	return (u + s) / clockTicks, nil
}

// machineIdleSeconds returns the CPU time all cores have spent idle or in
// iowait since boot.
func machineIdleSeconds() (float64, error) {
	b, err := os.ReadFile("/proc/stat")
	if err != nil {
		return 0, err
	}
	f := strings.Fields(strings.SplitN(string(b), "\n", 2)[0]) // cpu user nice system idle iowait ...
	if len(f) < 6 || f[0] != "cpu" {
		return 0, fmt.Errorf("unexpected /proc/stat: %q", f)
	}
	idle, _ := strconv.ParseFloat(f[4], 64)
	iowait, _ := strconv.ParseFloat(f[5], 64)
	return (idle + iowait) / clockTicks, nil
}
