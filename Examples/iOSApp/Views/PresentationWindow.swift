import UIKit

extension UIApplication {
    /// The window that system sheets (passkeys, the browser) are presented over: the key window of the active scene.
    var presentationWindow: UIWindow {
        let scenes = connectedScenes.compactMap { $0 as? UIWindowScene }
        let active = scenes.filter { $0.activationState == .foregroundActive }
        let windows = active.flatMap(\.windows) + scenes.flatMap(\.windows)
        return windows.first(where: \.isKeyWindow) ?? windows.first ?? UIWindow()
    }
}
