package fakeserver

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// wait blocks for d or until ctx is done.
func wait(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return ctx.Err()
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// toolSlow makes steps progress notifications (when the request has a
// progressToken), the first at once and the others intervalMs apart.
func (s *Server) toolSlow(w *work) (*frame, error) {
	var a struct {
		Steps      int `json:"steps"`
		IntervalMs int `json:"intervalMs"`
	}
	if err := args(w, &a); err != nil {
		return nil, err
	}
	steps := max(a.Steps, 1)
	for i := 1; i <= steps; i++ {
		if err := w.ctx.Err(); err != nil {
			return nil, err
		}
		s.progress(w, float64(i), float64(steps), fmt.Sprintf("slow: step %d of %d", i, steps))
		if i < steps {
			if err := wait(w.ctx, time.Duration(a.IntervalMs)*time.Millisecond); err != nil {
				return nil, err
			}
		}
	}
	return textResult(w, fmt.Sprintf("slow: %d steps done", steps), nil), nil
}

// Search limits.
const (
	// SearchDefaultTotal is how many records the search tool's data set has
	// unless the call says otherwise (the seed article's example).
	SearchDefaultTotal = 4382
	// SearchDefaultPage and SearchMaxPage bound a page of results.
	SearchDefaultPage = 50
	SearchMaxPage     = 200
)

// toolSearch is the good result contract: a bounded page of items,
// nextCursor and truncated when cut, totalEstimate only when the count is
// known exactly, and a text saying what was omitted and how to continue.
// With WithUnboundedResults it returns everything at once (the naive tool).
func (s *Server) toolSearch(w *work) (*frame, error) {
	var a struct {
		Query      string `json:"query"`
		Cursor     string `json:"cursor"`
		PageSize   int    `json:"pageSize"`
		Total      *int   `json:"total"`
		CountKnown *bool  `json:"countKnown"`
	}
	if err := args(w, &a); err != nil {
		return nil, err
	}
	total := SearchDefaultTotal
	if a.Total != nil {
		total = max(*a.Total, 0)
	}
	countKnown := a.CountKnown == nil || *a.CountKnown
	start := 0
	if a.Cursor != "" {
		n, err := strconv.Atoi(strings.TrimPrefix(a.Cursor, "offset:"))
		if err != nil || !strings.HasPrefix(a.Cursor, "offset:") || n < 0 || n > total {
			return nil, argError(fmt.Sprintf("search: invalid cursor %q", a.Cursor))
		}
		start = n
	}
	page := min(cmpOr(a.PageSize, SearchDefaultPage), SearchMaxPage)
	if s.cfg.unbounded {
		page = total - start
	}
	end := min(start+page, total)
	items := make([]any, 0, end-start)
	for i := start; i < end; i++ {
		if err := w.ctx.Err(); err != nil {
			return nil, err
		}
		items = append(items, map[string]any{"id": fmt.Sprintf("rec-%06d", i), "title": fmt.Sprintf("record %d matching %q", i, a.Query)})
	}
	sc := map[string]any{"items": items}
	var text string
	truncated := end < total
	if truncated {
		cursor := fmt.Sprintf("offset:%d", end)
		sc["nextCursor"] = cursor
		sc["truncated"] = true
		if countKnown {
			text = fmt.Sprintf("Returned %d of %d matching records (%d to %d); %d omitted. Call search again with cursor %q to continue.", len(items), total, start+1, end, total-end, cursor)
		} else {
			text = fmt.Sprintf("Returned %d matching records (%d to %d); more exist. Call search again with cursor %q to continue.", len(items), start+1, end, cursor)
		}
	} else {
		text = fmt.Sprintf("Returned %d matching records (%d to %d); nothing omitted.", len(items), start+1, end)
	}
	if countKnown {
		sc["totalEstimate"] = total
	}
	return textResult(w, text, sc), nil
}
