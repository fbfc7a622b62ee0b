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
type sseReader struct {
	r     *bufio.Reader
	max   int
	retry time.Duration // the last retry field, 0 if none
}

func newSSEReader(r io.Reader, max int) *sseReader {
	return &sseReader{r: bufio.NewReaderSize(r, 32<<10), max: max}
}

// next returns the next event with data or an id. Comments, retry fields
// and events with neither are skipped; io.EOF means the stream ended
// between events. An event may have an id and empty data: the priming
// event of MCP 2025-11-25 (§Resumability and Redelivery), which the
// HTML standard does not dispatch but whose id still counts for
// Last-Event-ID; callers record the id and skip the event.
func (s *sseReader) next() (*sseEvent, error) {
	var ev sseEvent
	var data []byte
	hasData, hasID := false, false
	for {
		line, err := readLine(s.r, s.max, false)
		if err != nil {
			if errors.Is(err, io.EOF) && (hasData || len(line) > 0) {
				return nil, io.ErrUnexpectedEOF // the last event was never completed
			}
			return nil, err
		}
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
			if hasData {
				data = append(data, '\n')
			}
			data = append(data, value...)
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
	}
}

// readLine reads one line of at most max bytes, ending in LF or CRLF, and
// returns it without the terminator. A longer line is errTooLarge, after
// the rest of it has been read and discarded if skip is set (never
// buffered); io.EOF comes with whatever unterminated text preceded it.
func readLine(r *bufio.Reader, max int, skip bool) ([]byte, error) {
	var line []byte
	for {
		chunk, err := r.ReadSlice('\n')
		if len(line)+len(chunk) > max+2 { // +2: the terminator
			for skip && errors.Is(err, bufio.ErrBufferFull) {
				_, err = r.ReadSlice('\n')
			}
			return nil, fmt.Errorf("line: %w (%d bytes)", errTooLarge, max)
		}
		line = append(line, chunk...)
		if errors.Is(err, bufio.ErrBufferFull) {
			continue
		}
		line = bytes.TrimSuffix(line, []byte("\n"))
		line = bytes.TrimSuffix(line, []byte("\r"))
		if len(line) > max { // the whole line has been read
			return nil, fmt.Errorf("line: %w (%d bytes)", errTooLarge, max)
		}
		return line, err
	}
}
