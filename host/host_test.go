package host_test

import (
	"context"
	"errors"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"

	baton "github.com/baton-run/baton"
	"github.com/baton-run/baton/host"
	"github.com/baton-run/baton/internal/app"
	"github.com/baton-run/baton/internal/ids"
	"github.com/baton-run/baton/internal/testenv"
	"github.com/baton-run/baton/pkg/reducer"
	"github.com/baton-run/baton/pkg/streams"
	"github.com/baton-run/baton/pkg/turn"
)

// TestNewOnRunsOnBatonsOwnResources: NewOn takes baton's Resources and an
// aws.Config; the functions' settings apply, and the App runs on the
// Resources' table.
func TestNewOnRunsOnBatonsOwnResources(t *testing.T) {
	ctx := context.Background()
	e, err := testenv.Provision(ctx, testenv.Emulator(), baton.Template())
	if err != nil {
		t.Fatal(err)
	}
	m, err := baton.Script([]byte(`{"steps":[{"text":"Hello."}]}`))
	if err != nil {
		t.Fatal(err)
	}
	greet := baton.Agent{Name: "greeter", Model: m}
	r := host.Resources{Table: e.Table, Bucket: e.Bucket, QueueURL: e.QueueURL, WakeGrace: 7 * time.Minute}
	var eng *app.App
	a, err := host.NewOn(ctx, app.OnBuild(host.Config{Agents: []baton.Agent{greet}}, func(a *app.App) { eng = a }), r, e.Clients().Config, nil)
	if err != nil {
		t.Fatal(err)
	}
	if got := eng.Tick().Grace; got != 7*time.Minute {
		t.Fatalf("tick grace %v, want the setting's 7m", got)
	}
	if got := a.AgentNames(); !slices.Equal(got, []string{"greeter"}) {
		t.Fatalf("agents %v, want the Config's only", got)
	}
	id := ids.New("s")
	if _, err := eng.Sessions.Create(ctx, id, "alice", "greeter"); err != nil {
		t.Fatalf("create on the Resources' table: %v", err)
	}
	if _, err := eng.Sessions.Post(ctx, id, reducer.Actor{Kind: reducer.ActorOperator, ID: "alice"}, "Hi"); err != nil {
		t.Fatal(err)
	}
	if out, err := eng.Runner.Start(ctx, id); err != nil || out.Kind != turn.Completed {
		t.Fatalf("start = %+v, %v; want completed", out, err)
	}
}

// TestNewOnRefusesIncompleteResources: a missing resource or a bad setting
// is an error naming it, before anything is built.
func TestNewOnRefusesIncompleteResources(t *testing.T) {
	ctx := context.Background()
	for name, r := range map[string]host.Resources{
		"BATON_TABLE":              {Bucket: "b", QueueURL: "q"},
		"BATON_HOLD":               {Table: "t", Bucket: "b", QueueURL: "q", Hold: -time.Second},
		"BATON_STREAM_BUCKET_TYPE": {Table: "t", Bucket: "b", QueueURL: "q", StreamBucketType: "Glacier"},
	} {
		_, err := host.NewOn(ctx, host.Config{}, r, testenv.Emulator().Clients.Config, nil)
		if err == nil || !strings.Contains(err.Error(), name) {
			t.Errorf("%s: NewOn = %v, want an error naming it", name, err)
		}
		if name == "BATON_STREAM_BUCKET_TYPE" && !errors.Is(err, streams.ErrInvalid) {
			t.Errorf("%s: %v, want streams.ErrInvalid", name, err)
		}
	}
}

// TestHandlerOfEachFunction: Main starts the handler of its Function; one
// that is none of the three is an error.
func TestHandlerOfEachFunction(t *testing.T) {
	ctx := context.Background()
	e, err := testenv.Provision(ctx, testenv.Emulator(), baton.Template())
	if err != nil {
		t.Fatal(err)
	}
	a, err := host.NewOn(ctx, host.Config{}, host.Resources{Table: e.Table, Bucket: e.Bucket, QueueURL: e.QueueURL}, e.Clients().Config, nil)
	if err != nil {
		t.Fatal(err)
	}
	for f, ok := range map[host.Function]func(any) bool{
		host.OperatorFunction: func(h any) bool {
			_, ok := h.(func(context.Context, events.APIGatewayV2HTTPRequest) (any, error))
			return ok
		},
		host.ResumeFunction: func(h any) bool {
			_, ok := h.(func(context.Context, events.SQSEvent) (events.SQSEventResponse, error))
			return ok
		},
		host.TickFunction: func(h any) bool {
			_, ok := h.(func(context.Context, events.EventBridgeEvent) (any, error))
			return ok
		},
	} {
		h, err := a.Handler(f)
		if err != nil || !ok(h) {
			t.Errorf("%v: handler %T, %v", f, h, err)
		}
	}
	if h, err := a.Handler(host.Function{}); err == nil {
		t.Errorf("Function{}: handler %T, want an error", h)
	}
}

// TestRegistrationsTakeTheSDKsConfig: what a program registers (a
// provider, the key store, the lambda invoker) is built on the AWS SDK's
// own aws.Config, not on a baton-internal type a program could not name
// without importing baton's internal packages.
func TestRegistrationsTakeTheSDKsConfig(t *testing.T) {
	want := reflect.TypeOf(aws.Config{})
	build, _ := reflect.TypeOf(host.Provider{}).FieldByName("Build")
	for name, fn := range map[string]reflect.Type{
		"Provider.Build": build.Type,
		"KeyStore":       reflect.TypeOf(host.KeyStore(nil)),
		"Lambda":         reflect.TypeOf(host.Lambda(nil)),
	} {
		if fn.Kind() != reflect.Func || fn.NumIn() == 0 || fn.In(0) != want {
			t.Errorf("%s is %v, want a func of aws.Config", name, fn)
		}
	}
}

// TestConfigCheckNamesTheField: Config.Check refuses a Go agent as New
// would, naming the agent and the field, without AWS.
func TestConfigCheckNamesTheField(t *testing.T) {
	m, err := baton.Script([]byte(`{"steps":[{"text":"hi"}]}`))
	if err != nil {
		t.Fatal(err)
	}
	good := baton.Agent{Name: "good", Model: m}
	if err := (host.Config{Agents: []baton.Agent{good}}).Check(); err != nil {
		t.Fatalf("a good agent: %v", err)
	}
	bad := baton.Agent{Name: "bad", Model: m, Limits: baton.Limits{MaxStepsPerTurn: -1}}
	err = host.Config{Agents: []baton.Agent{good, bad}}.Check()
	var ae *baton.AgentError
	if !errors.As(err, &ae) || ae.Agent != "bad" || ae.Field != "limits.maxStepsPerTurn" {
		t.Fatalf("a bad agent: %v, want an AgentError naming bad's limits.maxStepsPerTurn", err)
	}
}
