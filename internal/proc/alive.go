package proc

import (
	"os"
	"strconv"
	"strings"
	"syscall"
)

// Alive reports whether process pid exists and has not exited: a zombie,
// exited but not yet reaped, is not alive. It reads /proc where there is
// one; elsewhere kill(2), which finds zombies too.
func Alive(pid int) bool {
	if !hasProc() {
		return syscall.Kill(pid, 0) == nil
	}
	state, _, ok := stat(strconv.Itoa(pid))
	return ok && state != "Z"
}

// LiveInGroup counts the processes of group pgid that have not exited (as
// Alive). Without /proc it is 1 while kill(2) finds the group, zombies
// included, and 0 after.
func LiveInGroup(pgid int) int {
	if !hasProc() {
		if syscall.Kill(-pgid, 0) == nil {
			return 1
		}
		return 0
	}
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return 0
	}
	group, n := strconv.Itoa(pgid), 0
	for _, e := range entries {
		if _, err := strconv.Atoi(e.Name()); err != nil {
			continue
		}
		if state, pgrp, ok := stat(e.Name()); ok && state != "Z" && pgrp == group {
			n++
		}
	}
	return n
}

func hasProc() bool {
	_, err := os.Stat("/proc/self/stat")
	return err == nil
}

// stat reads the state and the process group of process pid from
// /proc/<pid>/stat; ok is false once it is gone.
func stat(pid string) (state, pgrp string, ok bool) {
	b, err := os.ReadFile("/proc/" + pid + "/stat")
	if err != nil {
		return "", "", false
	}
	// After the command name in parentheses: state, ppid, pgrp.
	s := string(b)
	f := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
	if len(f) < 3 {
		return "", "", false
	}
	return f[0], f[2], true
}
