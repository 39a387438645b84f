# baton — build, test, run and deploy.
#
#   make test     the full test suite (the same command CI runs)
#   make run      the local dev server: emulator, demo agent, API on :8080
#   make build    the three Lambda bootstraps under build/
#   make deploy   sam build && sam deploy --guided
#   make prune-versions STACK=name KEEP=5
#                 delete all but the newest KEEP published versions of the
#                 stack's resume function (a turn pinned to a deleted one fails)
#   make lint     gofmt and go vet

GO        ?= go
GOARCH    ?= arm64
FUNCTIONS := operator resume tick
# FUNCTIONS_DIR holds the mains the bootstraps are built from: the
# repository's own, or a program's, such as examples/supportdesk/functions
# (make deploy FUNCTIONS_DIR=./examples/supportdesk/functions).
FUNCTIONS_DIR ?= ./functions
export FUNCTIONS_DIR
LDFLAGS   := -s -w
BUILD     := CGO_ENABLED=0 GOOS=linux GOARCH=$(GOARCH) $(GO) build -tags lambda.norpc -trimpath -ldflags "$(LDFLAGS)"

.PHONY: build test run deploy prune-versions lint bench clean \
	build-OperatorFunction build-ResumeFunction build-TickFunction

build: $(FUNCTIONS:%=build/%/bootstrap)

build/%/bootstrap: FORCE
	$(BUILD) -o $@ $(FUNCTIONS_DIR)/$*

# sam build calls these with ARTIFACTS_DIR set (BuildMethod: makefile).
# An agents.json at the top of the repository ships next to each bootstrap;
# deploy with AgentsConfig=agents.json to use it (the default is the
# embedded demo agent; s3://... works too).
AGENTS_FILE := $(wildcard agents.json)
build-OperatorFunction:
	$(BUILD) -o $(ARTIFACTS_DIR)/bootstrap $(FUNCTIONS_DIR)/operator
	$(if $(AGENTS_FILE),cp $(AGENTS_FILE) $(ARTIFACTS_DIR)/)
build-ResumeFunction:
	$(BUILD) -o $(ARTIFACTS_DIR)/bootstrap $(FUNCTIONS_DIR)/resume
	$(if $(AGENTS_FILE),cp $(AGENTS_FILE) $(ARTIFACTS_DIR)/)
build-TickFunction:
	$(BUILD) -o $(ARTIFACTS_DIR)/bootstrap $(FUNCTIONS_DIR)/tick
	$(if $(AGENTS_FILE),cp $(AGENTS_FILE) $(ARTIFACTS_DIR)/)

test:
	$(GO) test ./...

bench:
	$(GO) test ./pkg/turn -run '^$$' -bench . -benchmem
	$(GO) test ./internal/tick -run '^$$' -bench . -benchtime 1x
	$(GO) test ./internal/provider/... -run '^$$' -bench . -benchmem
	BATON_MEASURE=1 $(GO) test ./test -run 'Sizes|Demo|DeployedLiveLatency' -v

run:
	@echo "compiling baton (the first time takes a minute or more; later runs start at once)"
	$(GO) run ./cmd/baton dev

deploy:
	sam build && sam deploy --guided

# Every deploy publishes a version of the resume function (template.yaml,
# AutoPublishAlias) and SAM deletes none; turns of agents whose onChange is
# pin resume on theirs. This keeps the newest KEEP; Lambda refuses to delete
# the version the alias points at.
KEEP ?= 5
prune-versions:
	@test -n "$(STACK)" || (echo "make prune-versions STACK=<stack name> [KEEP=5]"; exit 1)
	aws lambda list-versions-by-function --function-name $(STACK)-resume \
		--query 'Versions[?Version!=`$$LATEST`].Version' --output text | tr '\t' '\n' | sort -n | head -n -$(KEEP) | \
		xargs -r -n1 aws lambda delete-function --function-name $(STACK)-resume --qualifier

lint:
	@test -z "$$(gofmt -l .)" || (gofmt -l .; exit 1)
	$(GO) vet ./...

clean:
	rm -rf build .aws-sam

FORCE:
