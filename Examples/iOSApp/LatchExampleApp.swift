import LatchClient
import SwiftUI
import UIKit

/// The example app: sign up with a passkey (or register this device with App Attest), sign in, see the verified
/// ID-token claims, sign out. Every SDK call is in `LatchAppModel`. The views only show its state and call it.
@main
struct LatchExampleApp: App {
    /// The passkey sheet is presented over the app's key window, looked up each time a sheet opens.
    @StateObject private var model = LatchAppModel(
        passkeys: SystemPasskeyController(presentationAnchor: { UIApplication.shared.presentationWindow }))

    var body: some Scene {
        WindowGroup {
            RootView()
                .environmentObject(model)
                .task { await model.start() }
        }
    }
}
