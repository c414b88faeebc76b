//go:build !unix

package confined

// openFlags are added to every open; outside Unix there is no FIFO that
// blocks an open and no controlling terminal, so none.
const openFlags = 0
