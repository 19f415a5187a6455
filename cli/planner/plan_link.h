// `zerodp plan --link`: the address of the web page (docs/web.md) that shows the same plan.
//
// The page keeps its whole state in the query string, one key per plan flag, named as the
// flag without its dashes (params=1e9&gpus=8&gpu-memory=80GB); a flag without a value is
// key=1. A FILE flag (--model-config, --deepspeed-config) carries the file's text, since the
// page cannot read the user's disk. So the link holds everything the page needs.
//
// The base is --link-base URL, else the environment's ZERODP_WEB_URL (where one hosts the
// page, set once), else the relative "index.html" (beside the built page, build-web/).
#pragma once

#include <CLI/CLI.hpp>
#include <string>

namespace zerodp::cli {

struct LinkFlags {
  bool link = false;
  std::string link_base;
};

// Adds --link and --link-base to a command.
void add_link_flags(CLI::App& command, LinkFlags& flags);

// The page's address for the options given to `command` (already parsed). A FILE flag whose
// file cannot be read is a UsageError naming it.
std::string page_link(const CLI::App& command, const LinkFlags& flags);

// One query-string component: every byte but A-Z a-z 0-9 - . _ ~ , / : as %XX, so that '+',
// '&', '=', '#' and spaces survive any URL parser.
std::string encode_query_component(const std::string& text);

}  // namespace zerodp::cli
