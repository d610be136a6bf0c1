import HTTPTypes
import Hummingbird
import LatchCore
import LatchModel
import Logging

/// Turns every error into a JSON answer with a stable code. Nothing escapes as a bare 500 or a stack trace:
/// store failures become 503 `temporarily_unavailable`, anything unforeseen 500 `server_error` (logged).
///
/// A known path asked with a method it does not answer — `TRACE` included, which Latch never echoes (RFC 9110
/// §9.3.8) — answers 405 `method_not_allowed` with `Allow` listing the methods it does answer (§15.5.6), not 404.
/// (`HEAD` works wherever `GET` does, §9.3.2: the router generates those endpoints.)
struct ErrorMiddleware<Context: RequestContext>: RouterMiddleware {
    let routes: RouteMethods

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws
        -> Response
    {
        do {
            return try await next(request, context)
        } catch let error as LatchError {
            if error.code == .serverError {
                context.logger.error("request failed", metadata: ["error": "\(error)"])
            } else {
                context.logger.debug("request refused", metadata: ["code": "\(error.code)", "detail": "\(error.detail ?? "")"])
            }
            var extra = HTTPFields()
            for (name, value) in error.headers { if let field = HTTPField.Name(name) { extra[field] = value } }
            return ErrorStatus.response(
                code: error.code, message: error.message, status: error.atResource ? .unauthorized : nil, maxAge: error.maxAge,
                members: error.members, extraHeaders: extra, atResource: error.atResource)
        } catch let error as StoreUnavailableError {
            context.logger.error("store unavailable", metadata: ["error": "\(error.detail)"])
            return ErrorStatus.response(
                code: .temporarilyUnavailable, message: "the service is temporarily unavailable; retry later")
        } catch let error as HTTPError {
            switch error.status {
            case .notFound:
                if let allowed = routes.methods(of: request.uri.path), !allowed.contains(request.method) {
                    var names = allowed.map(\.rawValue)
                    if allowed.contains(.get) { names.append("HEAD") }
                    let list = names.sorted().joined(separator: ", ")
                    return ErrorStatus.response(
                        code: .methodNotAllowed, message: "\(request.method.rawValue) is not allowed here; use \(list)", extraHeaders: [.allow: list])
                }
                return ErrorStatus.response(code: .notFound, message: "no such endpoint")
            case .contentTooLarge:
                return ErrorStatus.response(code: .requestTooLarge, message: "the request body is too large")
            case .methodNotAllowed:
                return ErrorStatus.response(code: .methodNotAllowed, message: "method not allowed")
            default:
                return ErrorStatus.response(
                    code: error.status.code >= 500 ? .serverError : .invalidRequest,
                    message: error.body ?? error.status.reasonPhrase, status: error.status)
            }
        } catch {
            context.logger.error("unexpected error", metadata: ["error": "\(String(reflecting: type(of: error)))"])
            return ErrorStatus.response(code: .serverError, message: "an unexpected error occurred")
        }
    }
}
