package bridge

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"strconv"
	"time"
)

// errTooLarge: a line, event or message is over the size limit.
var errTooLarge = errors.New("over the size limit")

// sseEvent is one dispatched server-sent event.
type sseEvent struct {
	typ  string // "" means "message"
	id   string
	data []byte
}

// isMessage reports whether ev carries a JSON-RPC message: it has data and
// is of the "message" type. Others are priming events or of other kinds.
func (ev sseEvent) isMessage() bool {
	return len(ev.data) > 0 && (ev.typ == "" || ev.typ == "message")
}

// sseReader reads server-sent events (the WHATWG HTML "event stream"
// format) from an MCP response, holding at most max bytes of one event's
// data (plus one bufio buffer) in memory whatever the stream contains.
//
// An event of a single data line (as MCP servers send them) is that line's
// buffer itself, not a copy, and is valid until the next call to next or
// release. A large line is read into a buffer from pool (nil: none), which
// goes back to it once its event is done with.
type sseReader struct {
	r     *bufio.Reader
	max   int
	retry time.Duration // the last retry field, 0 if none
	pool  *bufPool
	held  []byte // the buffer of the last event's data
}

func newSSEReader(r io.Reader, max int, pool *bufPool) *sseReader {
	return &sseReader{r: bufio.NewReaderSize(r, 32<<10), max: max, pool: pool}
}

// release gives the buffer of the last event back to the pool; that event
// must not be used after it.
func (s *sseReader) release() {
	s.pool.put(s.held)
	s.held = nil
}

// next returns the next event with data or an id. Comments, retry fields
// and events with neither are skipped; io.EOF means the stream ended
// between events. An event may have an id and empty data: the priming
// event of MCP 2025-11-25 (§Resumability and Redelivery), which the
// HTML standard does not dispatch but whose id still counts for
// Last-Event-ID; callers record the id and skip the event.
func (s *sseReader) next() (*sseEvent, error) {
	s.release() // the caller is done with the last event
	var ev sseEvent
	var data []byte
	hasData, hasID := false, false
	for {
		line, err := readLine(s.r, s.max, false, s.pool)
		if err != nil {
			s.pool.put(line)
			if errors.Is(err, io.EOF) && (hasData || len(line) > 0) {
				return nil, io.ErrUnexpectedEOF // the last event was never completed
			}
			return nil, err
		}
		kept := false
		if len(line) == 0 { // blank line: dispatch
			if hasData || hasID {
				ev.data = data
				return &ev, nil
			}
			ev = sseEvent{}
			continue
		}
		if line[0] == ':' {
			continue
		}
		field, value, found := bytes.Cut(line, []byte(":"))
		if found && len(value) > 0 && value[0] == ' ' {
			value = value[1:]
		}
		switch string(field) {
		case "data":
			if len(data)+len(value)+1 > s.max {
				return nil, fmt.Errorf("event data: %w (%d bytes)", errTooLarge, s.max)
			}
			switch {
			case !hasData:
				data, s.held, kept = value, line, true // the line itself: no copy
			default:
				data = append(append(data[:len(data):len(data)], '\n'), value...)
			}
			hasData = true
		case "event":
			ev.typ = string(value)
		case "id":
			if !bytes.ContainsRune(value, 0) {
				ev.id, hasID = string(value), true
			}
		case "retry":
			if ms, err := strconv.Atoi(string(value)); err == nil && ms >= 0 {
				s.retry = time.Duration(ms) * time.Millisecond
			}
		}
		if !kept {
			s.pool.put(line)
		}
	}
}

// readLine reads one line of at most max bytes, ending in LF or CRLF, and
// returns it without the terminator; a line past minPooled bytes is read
// into a buffer from pool (see accumulator), which the caller gives back.
// A longer line is errTooLarge, after the rest of it has been read and
// discarded if skip is set (never buffered); io.EOF comes with whatever
// unterminated text preceded it.
func readLine(r *bufio.Reader, max int, skip bool, pool *bufPool) ([]byte, error) {
	acc := accumulator{pool: pool}
	for {
		chunk, err := r.ReadSlice('\n')
		if acc.Len()+len(chunk) > max+2 { // +2: the terminator
			for skip && errors.Is(err, bufio.ErrBufferFull) {
				_, err = r.ReadSlice('\n')
			}
			return acc.first(), fmt.Errorf("line: %w (%d bytes)", errTooLarge, max)
		}
		_, _ = acc.Write(chunk)
		if errors.Is(err, bufio.ErrBufferFull) {
			continue
		}
		line := bytes.TrimSuffix(acc.Bytes(), []byte("\n"))
		line = bytes.TrimSuffix(line, []byte("\r"))
		if len(line) > max { // the whole line has been read
			return line[:0], fmt.Errorf("line: %w (%d bytes)", errTooLarge, max)
		}
		return line, err
	}
}
