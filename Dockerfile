# goodput: a static binary on a distroless base, running as a non-root user.
#   docker build -t goodput .
#   docker run --rm goodput --help
FROM golang:1.26 AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
ARG VERSION=0.1.0-dev
RUN CGO_ENABLED=0 GOOS=linux go build -trimpath -ldflags "-s -w -X main.version=${VERSION}" -o /out/goodput ./cmd/goodput

FROM gcr.io/distroless/static-debian12:nonroot
COPY --from=build /out/goodput /usr/local/bin/goodput
USER nonroot:nonroot
EXPOSE 8080
ENTRYPOINT ["/usr/local/bin/goodput"]
