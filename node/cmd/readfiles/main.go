// Command readfiles is the workload of the real-node suite's image-volume
// test: a model server's stand-in that reads the model files it is given
// from an image volume and then waits, as pause does, for SIGTERM or
// SIGINT (exit 0). Built static (CGO_ENABLED=0) and copied into an image
// that holds nothing else.
//
// For each FILE argument, in order, it prints one line on stdout (the
// pod's log):
//
//	file FILE SIZE sha256:HEX
//
// and for a file of at most 4096 bytes a second line with its content,
// quoted as Go quotes strings:
//
//	content FILE "TEXT"
//
// then "ready". A file it cannot read prints "error FILE MESSAGE" and makes
// it exit 1 at once, so the pod does not run.
package main

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
)

// maxContent is the size up to which a file's content is printed.
const maxContent = 4096

func main() {
	for _, path := range os.Args[1:] {
		if err := describe(path); err != nil {
			fmt.Printf("error %s %v\n", path, err)
			os.Exit(1)
		}
	}
	fmt.Println("ready")
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGTERM, syscall.SIGINT)
	<-sig
}

// describe prints path's size and SHA-256, and its content when small.
func describe(path string) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	h := sha256.New()
	head := &limitedBuffer{max: maxContent + 1}
	n, err := io.Copy(io.MultiWriter(h, head), f)
	if err != nil {
		return err
	}
	fmt.Printf("file %s %d sha256:%s\n", path, n, hex.EncodeToString(h.Sum(nil)))
	if n <= maxContent {
		fmt.Printf("content %s %q\n", path, head.b)
	}
	return nil
}

// limitedBuffer keeps the first max bytes written to it and drops the rest.
type limitedBuffer struct {
	b   []byte
	max int
}

func (l *limitedBuffer) Write(p []byte) (int, error) {
	if room := l.max - len(l.b); room > 0 {
		l.b = append(l.b, p[:min(room, len(p))]...)
	}
	return len(p), nil
}
