#include "plan_link.h"

#include "plan_flags.h"

#include <cstdlib>
#include <fstream>
#include <sstream>

#include "zerodp/common/error.h"
#include "zerodp/common/file.h"

namespace zerodp::cli {
namespace {

// Flags that choose how the CLI prints, not what the plan is: the page has its own view.
bool describes_output(const std::string& name) {
  return name == "--help" || name == "--json" || name == "--link" || name == "--link-base" ||
         name == "--list-models" || name == "--list-gpus";
}

std::string file_text(const std::string& path, const std::string& flag) {
  std::string why;
  std::optional<std::string> text = read_bounded(path, kMaxConfigBytes, why);
  if (!text) throw UsageError(flag + ": cannot read " + quote(path) + " for --link (" + why + ")");
  return std::move(*text);
}

}  // namespace

void add_link_flags(CLI::App& command, LinkFlags& flags) {
  command.add_flag("--link", flags.link,
                   "print the web page's address for this plan instead of the plan "
                   "(docs/web.md)");
  command
      .add_option("--link-base", flags.link_base,
                  "where the page is hosted, for --link (default $ZERODP_WEB_URL, else "
                  "index.html)")
      ->type_name("URL");
}

std::string encode_query_component(const std::string& text) {
  static const char kHex[] = "0123456789ABCDEF";
  std::string out;
  for (unsigned char c : text) {
    const bool plain = (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
                       c == '-' || c == '.' || c == '_' || c == '~' || c == ',' || c == '/' ||
                       c == ':';
    if (plain) {
      out += static_cast<char>(c);
    } else {
      out += '%';
      out += kHex[c >> 4];
      out += kHex[c & 15];
    }
  }
  return out;
}

std::string page_link(const CLI::App& command, const LinkFlags& flags) {
  std::string query;
  for (const CLI::Option* option : command.get_options()) {
    const std::string name = option->get_name();
    if (option->count() == 0 || describes_output(name)) continue;
    std::string value = option->get_expected_min() == 0 ? "1" : option->as<std::string>();
    if (option->get_type_name() == "FILE") value = file_text(value, name);
    query += (query.empty() ? "" : "&") + encode_query_component(name.substr(2)) + "=" +
             encode_query_component(value);
  }
  std::string base = flags.link_base;
  if (base.empty()) {
    const char* hosted = std::getenv("ZERODP_WEB_URL");
    base = hosted && *hosted ? hosted : "index.html";
  }
  if (query.empty()) return base;
  return base + (base.find('?') == std::string::npos ? "?" : "&") + query;
}

}  // namespace zerodp::cli
