# toolhub: a static binary on an empty base image, running as a non-root user.
#
#   docker build -t toolhub --build-arg VERSION=$(git describe --tags --always) .
#   docker run --rm -p 8080:8080 -v $PWD/toolhub.yaml:/etc/toolhub/toolhub.yaml:ro toolhub
#
# The config must listen on 0.0.0.0 (addr: 0.0.0.0:8080), which toolhub only
# accepts with auth enabled. See docs/operations.md ("Containers").

FROM golang:1.26 AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
ARG VERSION=dev
# CGO off: the SQLite driver is pure Go, so the binary is fully static.
# The build context has no .git (see .dockerignore): the version comes
# from VERSION, and `toolhub version` says no VCS revision was recorded.
RUN CGO_ENABLED=0 go build -trimpath -buildvcs=false -tags timetzdata \
        -ldflags "-s -w -X main.version=${VERSION}" -o /out/toolhub ./cmd/toolhub \
 && mkdir -p /out/data \
 && echo 'toolhub:x:65532:65532:toolhub:/var/lib/toolhub:/sbin/nologin' > /out/passwd \
 && echo 'toolhub:x:65532:' > /out/group

FROM scratch
COPY --from=build /etc/ssl/certs/ca-certificates.crt /etc/ssl/certs/ca-certificates.crt
COPY --from=build /out/passwd /etc/passwd
COPY --from=build /out/group /etc/group
COPY --from=build --chown=65532:65532 /out/data /var/lib/toolhub
COPY --from=build /out/toolhub /usr/local/bin/toolhub
USER 65532:65532
WORKDIR /var/lib/toolhub
ENV TOOLHUB_CONFIG=/etc/toolhub/toolhub.yaml
EXPOSE 8080
VOLUME ["/var/lib/toolhub"]
ENTRYPOINT ["/usr/local/bin/toolhub"]
CMD ["serve", "--data", "/var/lib/toolhub"]
