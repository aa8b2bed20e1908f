// The `--metrics HOST:PORT` listener: `/metrics` and the health probes, no credential, nothing
// else (404). For a Prometheus scraper or a load balancer that should not hold the admin secret;
// it serves figures only, never data.

import Hummingbird
import HummingbirdCore
import NIOCore

struct MetricsListenerResponder: HTTPResponder {
    typealias Context = BasicRequestContext

    let metrics: MetricsEndpoint
    let health: HealthEndpoint

    func respond(to request: Request, context: Context) async throws -> Response {
        let method: RESTRequest.Method = request.method == .get ? .get : .post
        do {
            if request.uri.path == "/metrics" { return try RESTResponder.metricsResponse(self.metrics, method: method) }
            if let probe = HealthEndpoint.probe(request.uri.path) { return try RESTResponder.healthResponse(self.health, probe, method: method) }
            return RESTResponder.error(RESTError(status: 404, message: "this listener serves /metrics, /.health/live and /.health/ready only"))
        } catch {
            return RESTResponder.error(error)
        }
    }
}
