package api

import (
	"context"
	"net/http"

	"github.com/baton-run/baton/pkg/reducer"
)

// RewindRequest is the body of POST /sessions/{id}/rewind and
// POST /sessions/{id}/fork: the point to go back to (one of turn, turn
// and step, or before; see reducer.Point), and whether to cancel a turn
// open at the time (refused with 409 otherwise).
type RewindRequest struct {
	reducer.Point
	Cancel bool `json:"cancel,omitempty"`
}

// Rewound answers a rewind (200) or a fork (201): the session rewound
// (the new one, for a fork), where it went back to, the session it was
// forked from, and the side-effect executions after the point, which
// going back does not undo (never null).
type Rewound struct {
	Session string           `json:"session"`
	Point   reducer.Point    `json:"point"`
	From    string           `json:"from,omitempty"`
	Effects []reducer.Effect `json:"effects"`
	// Status is the session's status after it: idle, or suspended with
	// a turn reopened at a step (the next wake runs the next step).
	Status reducer.Status `json:"status"`
}

// Rewind takes session id back to a point of its conversation.
func (c *Client) Rewind(ctx context.Context, id string, in RewindRequest) (Rewound, error) {
	var out Rewound
	err := c.call(ctx, http.MethodPost, sessionPath(id)+"/rewind", in, &out)
	return out, err
}

// Fork makes a new session holding session id's conversation at a point.
func (c *Client) Fork(ctx context.Context, id string, in RewindRequest) (Rewound, error) {
	var out Rewound
	err := c.call(ctx, http.MethodPost, sessionPath(id)+"/fork", in, &out)
	return out, err
}
