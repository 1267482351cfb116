//! What the deployed functions allow a tenant, for `native deploy`: the functions a stack
//! names in its outputs (CloudFormation `DescribeStacks`: every output whose key ends in
//! `FunctionName`, i.e. the invoke, route, queue and http functions, the ones that run
//! scripts) and each one's timeout and memory (Lambda `GetFunctionConfiguration`). Both are
//! read with one signed call each ([`super::signed`]); the answers are parsed here, bounded and
//! with errors that say what was expected.

use bytes::Bytes;
use hyper::Method;
use percent_encoding::{utf8_percent_encode, AsciiSet, NON_ALPHANUMERIC};
use serde::Deserialize;

use super::signed::{call, Answer};
use super::SdkConfig;
use crate::{Error, Result};

/// A deployed function's settings that bound a tenant's limits.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DeployedFunction {
    /// Its name.
    pub name: String,
    /// Its timeout in seconds (Lambda's `Timeout`).
    pub timeout_s: u32,
    /// Its memory in MB (Lambda's `MemorySize`).
    pub memory_mb: u32,
}

/// What a stack's outputs name.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct StackOutputs {
    /// The functions that run scripts (outputs `<X>FunctionName`), in output order.
    pub functions: Vec<String>,
    /// The scripts bucket (output `ScriptsBucketName`), if the stack has one.
    pub scripts_bucket: Option<String>,
}

/// Everything but unreserved characters is encoded (RFC 3986), as AWS's query and path
/// encoding expects.
const ENCODE: &AsciiSet = &NON_ALPHANUMERIC
    .remove(b'-')
    .remove(b'_')
    .remove(b'.')
    .remove(b'~');

/// The outputs of stack `stack` (a name or stack id).
pub async fn stack_outputs(sdk: &SdkConfig, stack: &str) -> Result<StackOutputs> {
    if stack.is_empty() || stack.len() > 512 || stack.chars().any(|c| c.is_control()) {
        return Err(Error::InvalidInput(format!(
            "stack {stack:?} is not a stack name or id (1 to 128 letters, digits and '-', or its ARN)"
        )));
    }
    let body = format!(
        "Action=DescribeStacks&Version=2010-05-15&StackName={}",
        utf8_percent_encode(stack, ENCODE)
    );
    let what = format!("read the outputs of stack {stack:?} (cloudformation:DescribeStacks)");
    let answer = call(
        sdk,
        "cloudformation",
        Method::POST,
        "/",
        &[(
            "content-type",
            "application/x-www-form-urlencoded; charset=utf-8",
        )],
        Bytes::from(body),
        &what,
    )
    .await?;
    parse_stack_outputs(&answer, &what)
}

/// The function `function` (a name or ARN) as deployed.
pub async fn function_config(sdk: &SdkConfig, function: &str) -> Result<DeployedFunction> {
    let (answer, what) = configuration(sdk, function).await?;
    parse_function_config(&answer, &what)
}

/// The environment variables of the function `function` (a name or ARN) as deployed: what
/// it reads its table, queues and buckets from (`AwsConfig::from_vars`), for tools that work
/// on the same deployment (`native console --aws`).
pub async fn function_environment(
    sdk: &SdkConfig,
    function: &str,
) -> Result<std::collections::BTreeMap<String, String>> {
    let (answer, what) = configuration(sdk, function).await?;
    // Errors as parse_function_config words them.
    parse_function_config(&answer, &what)?;
    let v: serde_json::Value = serde_json::from_slice(&answer.body)
        .map_err(|e| failed(&what, format!("the answer is not JSON: {e}")))?;
    Ok(v["Environment"]["Variables"]
        .as_object()
        .map(|m| {
            m.iter()
                .filter_map(|(k, v)| Some((k.clone(), v.as_str()?.to_string())))
                .collect()
        })
        .unwrap_or_default())
}

/// Lambda's answer to GetFunctionConfiguration of `function`, and what the call was, for errors.
async fn configuration(sdk: &SdkConfig, function: &str) -> Result<(Answer, String)> {
    // Lambda's own pattern for a name, partial ARN or ARN (with a version or alias).
    let ok = !function.is_empty()
        && function.len() <= 170
        && function
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "-_:$.".contains(c));
    if !ok {
        return Err(Error::InvalidInput(format!(
            "function {function:?} is not a Lambda function name or ARN (letters, digits, '-', '_', ':', at most 170)"
        )));
    }
    let path = format!(
        "/2015-03-31/functions/{}/configuration",
        utf8_percent_encode(function, ENCODE)
    );
    let what = format!(
        "read the configuration of function {function:?} (lambda:GetFunctionConfiguration)"
    );
    let answer = call(sdk, "lambda", Method::GET, &path, &[], Bytes::new(), &what).await?;
    Ok((answer, what))
}

fn failed(what: &str, why: String) -> Error {
    Error::InvalidInput(format!("cannot {what}: {why}"))
}

/// A function's configuration from Lambda's JSON answer (or its error).
pub fn parse_function_config(answer: &Answer, what: &str) -> Result<DeployedFunction> {
    #[derive(Deserialize)]
    #[serde(rename_all = "PascalCase")]
    struct Config {
        function_name: String,
        timeout: u32,
        memory_size: u32,
    }
    if answer.status != 200 {
        // Lambda's errors: {"Type": "User", "Message": "..."} (some spell it "message").
        let v: serde_json::Value = serde_json::from_slice(&answer.body).unwrap_or_default();
        let msg = v["Message"]
            .as_str()
            .or(v["message"].as_str())
            .map(str::to_string)
            .unwrap_or_else(|| snippet(&answer.body));
        return Err(failed(what, format!("HTTP {}: {msg}", answer.status)));
    }
    let c: Config = serde_json::from_slice(&answer.body).map_err(|e| {
        failed(
            what,
            format!("the answer has no FunctionName, Timeout and MemorySize: {e}"),
        )
    })?;
    Ok(DeployedFunction {
        name: c.function_name,
        timeout_s: c.timeout,
        memory_mb: c.memory_size,
    })
}

/// A stack's outputs from CloudFormation's XML answer (or its error).
pub fn parse_stack_outputs(answer: &Answer, what: &str) -> Result<StackOutputs> {
    use aws_smithy_xml::decode::{try_data, Document};
    let text = std::str::from_utf8(&answer.body)
        .map_err(|_| failed(what, "the answer is not UTF-8".into()))?;
    let bad = |e: aws_smithy_xml::decode::XmlDecodeError| {
        failed(what, format!("the answer is not the XML expected: {e}"))
    };
    let mut doc = Document::new(text);
    let mut root = doc.root_element().map_err(bad)?;
    if answer.status != 200 || root.start_el().matches("ErrorResponse") {
        // <ErrorResponse><Error><Code>ValidationError</Code><Message>Stack with id x does
        // not exist</Message></Error></ErrorResponse>
        let (mut code, mut message) = (String::new(), String::new());
        while let Some(mut el) = root.next_tag() {
            if el.start_el().matches("Error") {
                while let Some(mut field) = el.next_tag() {
                    if field.start_el().matches("Code") {
                        code = try_data(&mut field).map_err(bad)?.into_owned();
                    } else if field.start_el().matches("Message") {
                        message = try_data(&mut field).map_err(bad)?.into_owned();
                    }
                }
            }
        }
        return Err(failed(
            what,
            format!("HTTP {} {code}: {message}", answer.status),
        ));
    }
    // DescribeStacksResponse > DescribeStacksResult > Stacks > member (one stack) > Outputs >
    // member > OutputKey, OutputValue. Other elements are skipped.
    let mut out = StackOutputs::default();
    let (mut has_result, mut has_stack) = (false, false);
    while let Some(mut result) = root.next_tag() {
        if !result.start_el().matches("DescribeStacksResult") {
            continue;
        }
        has_result = true;
        while let Some(mut stacks) = result.next_tag() {
            if !stacks.start_el().matches("Stacks") {
                continue;
            }
            // A stack name selects one stack: the first member.
            let Some(mut stack) = stacks.next_tag() else {
                continue;
            };
            has_stack = true;
            while let Some(mut outputs) = stack.next_tag() {
                if !outputs.start_el().matches("Outputs") {
                    continue;
                }
                while let Some(mut member) = outputs.next_tag() {
                    let (mut key, mut value) = (String::new(), String::new());
                    while let Some(mut field) = member.next_tag() {
                        if field.start_el().matches("OutputKey") {
                            key = try_data(&mut field).map_err(bad)?.trim().to_string();
                        } else if field.start_el().matches("OutputValue") {
                            value = try_data(&mut field).map_err(bad)?.trim().to_string();
                        }
                    }
                    if key.ends_with("FunctionName") && !value.is_empty() {
                        out.functions.push(value);
                    } else if key == "ScriptsBucketName" && !value.is_empty() {
                        out.scripts_bucket = Some(value);
                    }
                }
            }
        }
    }
    if !has_result {
        return Err(failed(
            what,
            "the answer has no DescribeStacksResult".into(),
        ));
    }
    if !has_stack {
        return Err(failed(what, "the answer names no stack".into()));
    }
    Ok(out)
}

/// The start of an answer, for an error message.
fn snippet(body: &[u8]) -> String {
    let text = String::from_utf8_lossy(&body[..body.len().min(300)]);
    text.trim().to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn answer(status: u16, body: &str) -> Answer {
        Answer {
            status,
            body: body.as_bytes().to_vec(),
        }
    }

    #[test]
    fn a_stacks_function_and_bucket_outputs_are_read() {
        // GIVEN CloudFormation's answer for a stack with outputs (as AWS spells it)
        let xml = r#"<DescribeStacksResponse xmlns="http://cloudformation.amazonaws.com/doc/2010-05-15/">
  <DescribeStacksResult><Stacks><member>
    <StackName>native</StackName>
    <Parameters><member><ParameterKey>FunctionTimeout</ParameterKey><ParameterValue>60</ParameterValue></member></Parameters>
    <Outputs>
      <member><OutputKey>InvokeFunctionName</OutputKey><OutputValue>native-InvokeFunction-AbC</OutputValue></member>
      <member><Description>Where a &amp; b</Description><OutputKey>ScriptsBucketName</OutputKey><OutputValue>native-scripts-1</OutputValue></member>
      <member><OutputKey>HttpFunctionUrl</OutputKey><OutputValue>https://x.lambda-url.us-east-1.on.aws/</OutputValue></member>
      <member><OutputKey>QueueFunctionName</OutputKey><OutputValue>native-QueueFunction-dEf</OutputValue></member>
    </Outputs>
  </member></Stacks></DescribeStacksResult>
  <ResponseMetadata><RequestId>r</RequestId></ResponseMetadata>
</DescribeStacksResponse>"#;
        // WHEN it is parsed THEN the functions and the scripts bucket are those outputs
        let out = parse_stack_outputs(&answer(200, xml), "read").unwrap();
        assert_eq!(
            out.functions,
            ["native-InvokeFunction-AbC", "native-QueueFunction-dEf"]
        );
        assert_eq!(out.scripts_bucket.as_deref(), Some("native-scripts-1"));
    }

    #[test]
    fn cloudformations_errors_are_said() {
        let xml = "<ErrorResponse><Error><Type>Sender</Type><Code>ValidationError</Code><Message>Stack with id nope does not exist</Message></Error></ErrorResponse>";
        let e = parse_stack_outputs(&answer(400, xml), "read the outputs of stack \"nope\"")
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("read the outputs of stack \"nope\"")
                && e.contains("HTTP 400 ValidationError: Stack with id nope does not exist"),
            "{e}"
        );
        let e = parse_stack_outputs(&answer(200, "not xml"), "read")
            .unwrap_err()
            .to_string();
        assert!(e.contains("not the XML expected"), "{e}");
        let e = parse_stack_outputs(&answer(200, "<Other/>"), "read")
            .unwrap_err()
            .to_string();
        assert!(e.contains("no DescribeStacksResult"), "{e}");
    }

    #[test]
    fn a_functions_configuration_is_read() {
        let json = r#"{"FunctionName":"native-QueueFunction-dEf","FunctionArn":"arn:aws:lambda:us-east-1:1:function:native-QueueFunction-dEf","Runtime":"provided.al2023","Timeout":60,"MemorySize":512,"Architectures":["x86_64"]}"#;
        let f = parse_function_config(&answer(200, json), "read").unwrap();
        assert_eq!(
            f,
            DeployedFunction {
                name: "native-QueueFunction-dEf".into(),
                timeout_s: 60,
                memory_mb: 512
            }
        );
        let e = parse_function_config(
            &answer(
                404,
                r#"{"Type":"User","Message":"Function not found: arn:aws:lambda:us-east-1:1:function:nope"}"#,
            ),
            "read the configuration of function \"nope\"",
        )
        .unwrap_err()
        .to_string();
        assert!(e.contains("HTTP 404: Function not found"), "{e}");
        let e = parse_function_config(&answer(200, r#"{"FunctionName":"f"}"#), "read")
            .unwrap_err()
            .to_string();
        assert!(e.contains("no FunctionName, Timeout and MemorySize"), "{e}");
    }
}
