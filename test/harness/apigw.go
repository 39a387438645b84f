package harness

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"slices"
	"sync"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/apigatewayv2"
	apigwtypes "github.com/aws/aws-sdk-go-v2/service/apigatewayv2/types"
)

// kumo's execute-api (API Gateway v1/v2) and Lambda function URLs reach a
// function by POSTing to kumo's own Invoke endpoint with http.DefaultClient.
// The URL is fixed when kumo's packages initialise, from KUMO_HOST/KUMO_PORT,
// and defaults to http://localhost:4566 — not the random port of an
// in-process kumo.NewServer. RouteSelfCalls patches the test process's
// http.DefaultTransport so those calls reach the right server.

var selfCallMu sync.Mutex

// kumoSelfCallAddr is the host:port kumo's self-calls dial, computed the way
// kumo's execapi.ResolveBaseURL does.
func kumoSelfCallAddr() string {
	host, port := os.Getenv("KUMO_HOST"), os.Getenv("KUMO_PORT")
	if host == "" {
		host = "localhost"
	}
	if port == "" {
		port = "4566"
	}
	return net.JoinHostPort(host, port)
}

// RouteSelfCalls makes the in-process kumo at endpoint reachable at the
// address kumo's execute-api and function-URL data planes call themselves on
// (localhost:4566 unless KUMO_HOST/KUMO_PORT were set when the process
// started). It replaces http.DefaultTransport with a clone whose dialer
// redirects that one address; everything else dials normally. It is
// process-wide: one kumo per test binary can be routed at a time (all
// kumo.NewServer instances in a process share their service state anyway).
// restore puts the previous transport back.
func RouteSelfCalls(endpoint string) (restore func(), err error) {
	u, err := url.Parse(endpoint)
	if err != nil || u.Host == "" {
		return nil, fmt.Errorf("harness: endpoint %q: not a URL", endpoint)
	}
	target := u.Host
	from := kumoSelfCallAddr()

	selfCallMu.Lock()
	defer selfCallMu.Unlock()
	prev := http.DefaultTransport
	base, ok := prev.(*http.Transport)
	if !ok {
		return nil, fmt.Errorf("harness: http.DefaultTransport is %T, not *http.Transport", prev)
	}
	t := base.Clone()
	dial := base.DialContext
	if dial == nil {
		dial = (&net.Dialer{}).DialContext
	}
	t.DialContext = func(ctx context.Context, network, addr string) (net.Conn, error) {
		if addr == from {
			addr = target
		}
		return dial(ctx, network, addr)
	}
	http.DefaultTransport = t
	return func() {
		selfCallMu.Lock()
		defer selfCallMu.Unlock()
		t.CloseIdleConnections()
		http.DefaultTransport = prev
	}, nil
}

// APIGatewayV2Client returns an API Gateway v2 client for the kumo endpoint.
func APIGatewayV2Client(endpoint string) *apigatewayv2.Client {
	return apigatewayv2.NewFromConfig(awsConfig(endpoint))
}

// JWTAuthorizer configures an HTTP API JWT authorizer. kumo checks only the
// token's claims (exp present and in the future, iss equal to Issuer when
// set, aud — or client_id when aud is absent — in Audience when set); it
// never verifies the signature and never fetches the issuer's JWKS.
type JWTAuthorizer struct {
	Issuer   string
	Audience []string
	// IdentitySource defaults to "$request.header.Authorization"; the header
	// must carry "Bearer <token>".
	IdentitySource string
	// Scopes become the routes' AuthorizationScopes. kumo stores them but
	// does not enforce them.
	Scopes []string
}

// HTTPAPIConfig describes the HTTP API CreateHTTPAPI builds.
type HTTPAPIConfig struct {
	Name string
	// Routes are route keys ("POST /turns", "GET /turns/{id}", "$default");
	// default ["$default"]. All go to the one Lambda integration.
	Routes []string
	// JWT, when set, protects every route but those in Public.
	JWT *JWTAuthorizer
	// Public are route keys, also in Routes, served without the JWT
	// authorizer (a SAM event's Auth: {Authorizer: NONE}).
	Public []string
	// Stage defaults to "$default" (served at the root of the invoke URL);
	// a named stage is served under /<stage>.
	Stage string
}

// HTTPAPI is an API Gateway v2 HTTP API in kumo whose routes invoke a Lambda
// through an AWS_PROXY integration with payload format 2.0.
type HTTPAPI struct {
	ID    string
	Stage string
	// Endpoint is the kumo URL requests are sent to; Host is the Host header
	// that selects the API: <ID>.execute-api.localhost:<port>.
	Endpoint string
	Host     string
	// AuthorizerID is set when the API has a JWT authorizer.
	AuthorizerID string
}

// CreateHTTPAPI creates an HTTP API fronting the function functionARN:
// CreateApi (HTTP), CreateIntegration (AWS_PROXY, 2.0), CreateAuthorizer
// (JWT, optional), CreateRoute per route key, CreateStage (AutoDeploy).
// Requests through it only reach the function once RouteSelfCalls(endpoint)
// is in effect.
func CreateHTTPAPI(ctx context.Context, endpoint, functionARN string, cfg HTTPAPIConfig) (*HTTPAPI, error) {
	c := APIGatewayV2Client(endpoint)
	u, err := url.Parse(endpoint)
	if err != nil {
		return nil, fmt.Errorf("harness: endpoint %q: %w", endpoint, err)
	}
	if cfg.Name == "" {
		cfg.Name = "baton-test"
	}
	if len(cfg.Routes) == 0 {
		cfg.Routes = []string{"$default"}
	}
	if cfg.Stage == "" {
		cfg.Stage = "$default"
	}

	api, err := c.CreateApi(ctx, &apigatewayv2.CreateApiInput{
		Name:         aws.String(cfg.Name),
		ProtocolType: apigwtypes.ProtocolTypeHttp,
	})
	if err != nil {
		return nil, fmt.Errorf("harness: CreateApi: %w", err)
	}
	a := &HTTPAPI{
		ID:       aws.ToString(api.ApiId),
		Stage:    cfg.Stage,
		Endpoint: endpoint,
		Host:     aws.ToString(api.ApiId) + ".execute-api.localhost:" + u.Port(),
	}

	integ, err := c.CreateIntegration(ctx, &apigatewayv2.CreateIntegrationInput{
		ApiId:                aws.String(a.ID),
		IntegrationType:      apigwtypes.IntegrationTypeAwsProxy,
		IntegrationUri:       aws.String(functionARN),
		IntegrationMethod:    aws.String(http.MethodPost),
		PayloadFormatVersion: aws.String("2.0"),
	})
	if err != nil {
		return nil, fmt.Errorf("harness: CreateIntegration: %w", err)
	}

	if j := cfg.JWT; j != nil {
		if a.AuthorizerID, err = createAuthorizer(ctx, c, a.ID, cfg.Name, j); err != nil {
			return nil, err
		}
	}
	if err := createRoutes(ctx, c, a, aws.ToString(integ.IntegrationId), cfg); err != nil {
		return nil, err
	}

	if _, err := c.CreateStage(ctx, &apigatewayv2.CreateStageInput{
		ApiId:      aws.String(a.ID),
		StageName:  aws.String(cfg.Stage),
		AutoDeploy: aws.Bool(true),
	}); err != nil {
		return nil, fmt.Errorf("harness: CreateStage: %w", err)
	}
	return a, nil
}

// createAuthorizer adds j's JWT authorizer to the API and returns its id.
func createAuthorizer(ctx context.Context, c *apigatewayv2.Client, apiID, name string, j *JWTAuthorizer) (string, error) {
	src := j.IdentitySource
	if src == "" {
		src = "$request.header.Authorization"
	}
	auth, err := c.CreateAuthorizer(ctx, &apigatewayv2.CreateAuthorizerInput{
		ApiId:          aws.String(apiID),
		Name:           aws.String(name + "-jwt"),
		AuthorizerType: apigwtypes.AuthorizerTypeJwt,
		IdentitySource: []string{src},
		JwtConfiguration: &apigwtypes.JWTConfiguration{
			Issuer:   aws.String(j.Issuer),
			Audience: j.Audience,
		},
	})
	if err != nil {
		return "", fmt.Errorf("harness: CreateAuthorizer: %w", err)
	}
	return aws.ToString(auth.AuthorizerId), nil
}

// createRoutes adds cfg's routes to the API, each to the integration,
// behind the authorizer unless public.
func createRoutes(ctx context.Context, c *apigatewayv2.Client, a *HTTPAPI, integration string, cfg HTTPAPIConfig) error {
	for _, key := range cfg.Routes {
		in := &apigatewayv2.CreateRouteInput{
			ApiId:    aws.String(a.ID),
			RouteKey: aws.String(key),
			Target:   aws.String("integrations/" + integration),
		}
		if a.AuthorizerID != "" && !slices.Contains(cfg.Public, key) {
			in.AuthorizationType = apigwtypes.AuthorizationTypeJwt
			in.AuthorizerId = aws.String(a.AuthorizerID)
			in.AuthorizationScopes = cfg.JWT.Scopes
		}
		if _, err := c.CreateRoute(ctx, in); err != nil {
			return fmt.Errorf("harness: CreateRoute %q: %w", key, err)
		}
	}

	return nil
}

// NewRequest builds a request for path on the API: sent to Endpoint (plus
// /<stage> for a named stage) with Host set to the execute-api host.
func (a *HTTPAPI) NewRequest(ctx context.Context, method, path string, body io.Reader) (*http.Request, error) {
	prefix := ""
	if a.Stage != "$default" {
		prefix = "/" + a.Stage
	}
	req, err := http.NewRequestWithContext(ctx, method, a.Endpoint+prefix+path, body)
	if err != nil {
		return nil, fmt.Errorf("harness: %w", err)
	}
	req.Host = a.Host
	return req, nil
}

// UnverifiedJWT returns a compact JWT carrying claims with a header naming
// RS256 and a signature that is not one. kumo's JWT authorizer accepts it
// (it reads claims only); real API Gateway would not.
func UnverifiedJWT(claims map[string]any) (string, error) {
	header, err := json.Marshal(map[string]string{"alg": "RS256", "typ": "JWT", "kid": "harness"})
	if err != nil {
		return "", fmt.Errorf("harness: jwt header: %w", err)
	}
	payload, err := json.Marshal(claims)
	if err != nil {
		return "", fmt.Errorf("harness: jwt claims: %w", err)
	}
	enc := base64.RawURLEncoding.EncodeToString
	return enc(header) + "." + enc(payload) + "." + enc([]byte("not-a-signature")), nil
}
