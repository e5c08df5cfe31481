package main

import (
	"bufio"
	"os"
	"path/filepath"
	"strings"
	"syscall"
)

// detachFlag makes umount2 detach a busy mount now (--lazy).
const detachFlag = syscall.MNT_DETACH

// mountOf reads /proc/self/mountinfo for the mount holding abs (an
// absolute path): the longest mount point that is abs or a parent of it,
// the last one mounted when several are stacked.
func mountOf(abs string) (mountInfo, error) {
	if p, err := filepath.EvalSymlinks(abs); err == nil {
		abs = p
	}
	f, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		return mountInfo{}, nil // not said: the mount itself reports
	}
	defer f.Close()
	var best mountInfo
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		// id parent major:minor root POINT options... - TYPE source super
		fields := strings.Fields(sc.Text())
		sep := -1
		for i, f := range fields {
			if f == "-" {
				sep = i
				break
			}
		}
		if len(fields) < 5 || sep < 0 || sep+1 >= len(fields) {
			continue
		}
		point := unescapeMount(fields[4])
		if !under(abs, point) || (best.found && len(point) < len(best.point)) {
			continue
		}
		best = mountInfo{point: point, fstype: fields[sep+1], found: true}
		if sep+2 < len(fields) {
			best.source = unescapeMount(fields[sep+2])
		}
	}
	return best, sc.Err()
}

// under reports whether path is dir or inside it.
func under(path, dir string) bool {
	return path == dir || dir == "/" || strings.HasPrefix(path, dir+"/")
}

// unescapeMount undoes mountinfo's octal escapes (\040 for a space).
func unescapeMount(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+3 < len(s) && isOctal(s[i+1]) && isOctal(s[i+2]) && isOctal(s[i+3]) {
			b.WriteByte((s[i+1]-'0')<<6 | (s[i+2]-'0')<<3 | (s[i+3] - '0'))
			i += 3
			continue
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

func isOctal(c byte) bool { return c >= '0' && c <= '7' }
