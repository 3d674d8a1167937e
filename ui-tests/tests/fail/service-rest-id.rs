use toolfunc::tool_service;

#[derive(Default)]
struct Users;

#[tool_service]
impl Users {
    fn get(&self, user_id: u32) -> String {
        user_id.to_string()
    }

    fn list(&self) -> Vec<String> {
        Vec::new()
    }
}

fn main() {}
