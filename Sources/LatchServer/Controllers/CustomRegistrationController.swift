import Foundation
import HTTPTypes
import Hummingbird
import LatchCore
import LatchModel

/// Custom registration: the app's steps (`/v1/custom-registrations/…`, unauthenticated and rate-limited like
/// registration) and the admin's custom identity providers (`/admin/v1/custom-providers…`).
struct CustomRegistrationController {
    let service: CustomRegistrationService

    var publicEndpoints: RouteCollection<LatchRequestContext> {
        let routes = RouteCollection(context: LatchRequestContext.self)
        routes.get("providers") { _, _ -> Response in try JSONResponse.make(try await service.enabledProviders()) }
        routes.post("init") { request, _ -> Response in
            try JSONResponse.make(try await service.initiate(try await request.decodeJSON(CustomRegistrationInitRequest.self)))
        }
        routes.post("complete") { request, _ -> Response in
            try JSONResponse.make(
                try await service.complete(try await request.decodeJSON(CustomRegistrationCompleteRequest.self)), status: .created)
        }
        routes.post("cancel") { request, _ -> Response in
            try await service.cancel(try await request.decodeJSON(CustomRegistrationCancelRequest.self))
            return AdminController.noContent
        }
        return routes
    }

    func addAdmin(to group: RouterGroup<AdminContext>) {
        group.post("custom-providers") { request, _ -> Response in
            try JSONResponse.make(
                try await service.createProvider(try await request.decodeJSON(AdminCustomProviderRequest.self)), status: .created)
        }
        group.get("custom-providers") { _, _ -> Response in try JSONResponse.make(try await service.providers()) }
        group.get("custom-providers/:id") { _, context -> Response in
            try JSONResponse.make(try await service.provider(id: try context.parameters.require("id")))
        }
        group.patch("custom-providers/:id") { request, context -> Response in
            try JSONResponse.make(
                try await service.updateProvider(id: try context.parameters.require("id"), try await request.decodeJSON(AdminCustomProviderPatch.self)))
        }
        group.delete("custom-providers/:id") { _, context -> Response in
            try await service.deleteProvider(id: try context.parameters.require("id"))
            return AdminController.noContent
        }
        group.get("custom-providers/:id/transactions") { request, context -> Response in
            let query = request.uri.queryParameters
            let limit = try query.get("limit").map { text throws(LatchError) in
                guard let value = Int(text) else { throw LatchError.invalidInput("limit must be a number") }
                return value
            }
            return try JSONResponse.make(
                try await service.transactions(providerID: try context.parameters.require("id"), state: query.get("state"), limit: limit))
        }
    }
}
